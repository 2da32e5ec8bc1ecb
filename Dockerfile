# askrepo: a static Go binary on a small Alpine base with git (the tools run
# git ls-files for gitignore-exact listings, and the git history tools), ssh
# (for ssh:// and git@host: repositories) and universal-ctags (the code
# index's definitions in other languages than Go).
#
#   docker build --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) -t askrepo .
#   docker run --rm --env-file .env -v "$PWD:/repo:ro" -v askrepo-data:/data -p 8080:8080 askrepo

FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build context has no .git (.dockerignore), so the version and commit
# are stamped from build arguments.
ARG VERSION=""
ARG COMMIT=""
# CGO off: the SQLite driver is pure Go, so the binary needs no libc.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/bot ./cmd/bot

FROM alpine:3.22
# openssh-client: ssh remotes are cloned through ssh. ctags is Alpine's
# package of universal-ctags, with JSON output. The user has a home
# for ssh's own files; host keys are kept under /data (or pinned with a
# mounted BOT_SSH_KNOWN_HOSTS file), never only in the container.
RUN apk add --no-cache git openssh-client ctags ca-certificates tzdata \
 && adduser -D -h /home/askrepo -u 10001 askrepo \
 && mkdir -p /data /repo && chown askrepo /data \
 && git config --system --add safe.directory '*'
COPY --from=build /out/bot /usr/local/bin/bot
USER askrepo
ENV REPO_PATH=/repo \
    BOT_DATA_DIR=/data \
    BOT_HTTP_ADDR=:8080
EXPOSE 8080
VOLUME ["/data"]
# bot healthcheck asks /healthz wherever BOT_HTTP_ADDR says it listens.
HEALTHCHECK --interval=30s --timeout=5s CMD ["/usr/local/bin/bot", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/bot"]
CMD ["serve"]
