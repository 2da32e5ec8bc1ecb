// Package render turns what a turn produces into Slack messages: the tool
// calls in progress as context lines with a Stop button, the model's answer
// as markdown blocks cut to Slack's limits with a footer of its numbers, and
// an error as one safe sentence with a reference. Everything the model or a
// repository wrote is defused on the way: mention tokens cannot ping, links
// that leave the repository's web view show their host, and the mrkdwn
// fallback text escapes what Slack would read as markup.
//
// The functions are pure and deterministic (the same input renders the same
// bytes, which the golden tests under testdata hold), and safe for
// concurrent use. Posting, updating and retrying are the slackbot package's.
//
// It imports slack-go for the block types and no other internal package
// but two leaves: the Markdown scanner mdscan, which cite shares, so that
// what the renderer leaves alone as code is what the citation checker
// leaves alone; and gitexec, for the one way a commit is shortened.
package render
