// Package slackbot is the Slack side of askrepo: it holds a Socket Mode
// connection, turns mentions, thread follow-ups and DMs into agent turns (one
// thread is one session), shows each tool call as a context line in the
// thread, and posts the answer.
//
// The flow of one message is: the read loop acks the envelope at once and
// hands it to the intake; the intake filters it (pure functions in
// filter.go), dedupes it through the session store, checks the allow-lists,
// and queues it on its thread; a thread's turns run one at a time in arrival
// order, and at most Config.MaxConcurrent turns run at once.
//
// With Config.Repos, each thread is bound to one repository (the channel's
// default, or the one its first question names with "in NAME:"), and each
// turn holds a lease on that repository's checkout from start to end: the
// tools, the citations in the answer and the footer all see one commit.
//
// It is the only package that imports slack-go. It imports agent, llm,
// repos, session and tools for their types, and nothing from cmd.
package slackbot
