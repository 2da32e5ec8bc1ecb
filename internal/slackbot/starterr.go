package slackbot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/slack-go/slack"
)

// appTokenShape says what an app-level token looks like and where one is
// made, for a value that is not one. It names the kind of token it got only
// when the prefix tells (a bot or user token pasted into the wrong
// setting), and never prints the value.
func appTokenShape(got string) string {
	msg := "the app-level token must start with xapp-: make one in the Slack app settings → Basic Information → App-Level Tokens → Generate Token and Scopes, with the connections:write scope"
	switch {
	case strings.HasPrefix(got, "xoxb-"):
		msg += "; this one is a bot token (xoxb-), which cannot open Socket Mode connections"
	case strings.HasPrefix(got, "xoxp-"):
		msg += "; this one is a user token (xoxp-), which cannot open Socket Mode connections"
	}
	return msg
}

// slackAPIURL is where slack-go sends Web API calls when Config.APIURL is
// empty.
const slackAPIURL = slack.APIURL

// startError explains why a call Run makes before serving failed. Only an
// answer from Slack blames the token (hint says what to check): a name that
// does not resolve, a refused connection, a proxy or TLS failure never
// reached Slack, and the error says so and why.
func (b *Bot) startError(method, doing string, err error, hint string) error {
	var (
		se  slack.SlackErrorResponse
		sc  slack.StatusCodeError
		ue  *url.Error
		ne  net.Error
		dns *net.DNSError
	)
	base := b.cfg.APIURL
	if base == "" {
		base = slackAPIURL
	}
	base = shownURL(base)
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s with %s: %w", doing, method, err)
	case errors.As(err, &se):
		return fmt.Errorf("%s: Slack refused it in %s: %w (%s)", doing, method, err, hint)
	case errors.As(err, &sc):
		return fmt.Errorf("%s: the Slack API at %s answered %s with HTTP %d, not an API reply: %w (check SLACK_API_URL and any proxy in between)", doing, base, method, sc.Code, err)
	case errors.As(err, &dns):
		return fmt.Errorf("could not reach the Slack API at %s for %s: the host name %s does not resolve (%w); check DNS and the network, or SLACK_API_URL", base, method, dns.Name, err)
	case errors.As(err, &ue), errors.As(err, &ne):
		return fmt.Errorf("could not reach the Slack API at %s for %s: %w; check the network, any HTTPS proxy (HTTPS_PROXY), or SLACK_API_URL", base, method, err)
	}
	return fmt.Errorf("%s with %s: %w", doing, method, err)
}

// shownURL is s as an error may quote it: without user information or
// query, either of which can hold a credential (a proxy's https://user:pw@
// or ?token=… in SLACK_API_URL).
func shownURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	u.User = nil
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = "…", false
	}
	return u.String()
}

// shownURLClient makes Web API calls with c. The *url.Error of a call that
// failed names its URL, of which net/http masks only the password; it goes
// to the log and into start errors as shownURL has it.
type shownURLClient struct{ c *http.Client }

func (s shownURLClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := s.c.Do(req)
	if ue, ok := errors.AsType[*url.Error](err); ok {
		ue.URL = shownURL(ue.URL)
	}
	return resp, err
}
