# askrepo: a static Go binary on a small Alpine base that has git, which the
# repository tools run (git ls-files for gitignore-exact listings).
#
#   docker build -t askrepo .
#   docker run --rm --env-file .env -v "$PWD:/repo:ro" -v askrepo-data:/data askrepo

FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO off: the SQLite driver is pure Go, so the binary needs no libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/bot ./cmd/bot

FROM alpine:3.22
RUN apk add --no-cache git ca-certificates tzdata \
 && adduser -D -H -u 10001 askrepo \
 && mkdir -p /data /repo && chown askrepo /data \
 && git config --system --add safe.directory '*'
COPY --from=build /out/bot /usr/local/bin/bot
USER askrepo
ENV REPO_PATH=/repo \
    BOT_DATA_DIR=/data \
    BOT_HTTP_ADDR=:8080
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=30s --timeout=3s CMD wget -qO- http://127.0.0.1:8080/healthz >/dev/null || exit 1
ENTRYPOINT ["/usr/local/bin/bot"]
CMD ["serve"]
