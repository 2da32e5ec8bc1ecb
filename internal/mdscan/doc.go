// Package mdscan is the one reading of Markdown's code and link syntax that
// the citation checker (cite) and the Slack renderer (slackbot/render)
// share: fenced code blocks, inline code spans, backslash escapes,
// autolinks and inline links, following CommonMark where the two sides
// meet. Both must agree on what is code: a citation found inside what Slack
// shows as code would be rewritten into a link the reader never sees, and a
// link the renderer takes for code would keep its host hidden.
//
// It reads Markdown; it renders nothing and knows no dialect but
// CommonMark's. Raw HTML and e-mail autolinks are not recognised (neither
// side treats them). Its functions are pure and safe for concurrent use;
// an Inline, which keeps the code spans it found in its line, is for one
// goroutine.
//
// It is a leaf: it imports no other internal package.
package mdscan
