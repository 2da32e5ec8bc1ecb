// Package slackbot is the Slack adapter of askrepo: it holds a Socket Mode
// connection, turns mentions, thread follow-ups and DMs into turns (one
// thread is one session), and does Slack's part of each: reactions, the
// status line, the tool calls as context lines with a Stop button, the
// answer's messages, and the one sentence that says why there is none. The
// turn itself (the session, the preamble, compaction, the agent, the
// persisted steps, the citation check) is internal/turn's Runner, which
// this package drives through the Turns interface. What the messages hold
// is rendered by the render subpackage; this package posts, updates and
// retries them.
//
// The flow of one message is: the read loop filters it (pure functions in
// filter.go), records it in the session store's inbox, which dedupes it,
// acks the envelope and hands the message to the intake; the intake checks
// the allow-lists and queues it on its thread, and the inbox record is
// marked handled once its turn is stored. A thread's turns run one at a
// time in arrival order, and at most Config.MaxConcurrent turns run at
// once. A message acked by a process that died before its turn was stored
// is still in the inbox, for the next start or another replica.
//
// Each thread is bound to one repository of Config.Repos (the channel's
// default, or the one its first question names with "in NAME:"), and each
// turn holds a lease on that repository's checkout from start to end: the
// tools, the citations in the answer and the footer all see one commit.
// With Config.Shared, replicas share threads through the store (see
// replica.go); alone, a start recovers the turns a restart cut off.
//
// It and its subpackages are the only packages that import slack-go. It
// imports turn, agent, llm, repos and session for their types and errors,
// render for its messages; never tools (what a tool read comes with the
// turn's events), and nothing from cmd.
package slackbot
