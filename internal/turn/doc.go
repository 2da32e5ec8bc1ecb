// Package turn runs one question of a thread from its stored session to a
// checked answer, the same way for every front end (Slack, the terminal):
// it loads the session once, puts the repository's context in front of a
// thread's first question (or says the checkout moved since the last
// answer), compacts the history under the context budget, records the
// turn in the store, runs the agent over a leased checkout with every
// step persisted as it completes, and checks the answer's citations at
// the lease's commit. It resumes, or runs again, a turn a restart cut off.
//
// What a front end shows (progress, the answer, reactions) and how a turn
// ends in the store are the caller's: the runner reports tool calls and
// steps through its Observer and returns a Result.
//
// It must not import slack-go or internal/slackbot: of where its question
// came from, a turn knows only the channel's ID, which chooses the tools
// offered there (Config.Tools). A Runner is safe for concurrent use;
// turns of different threads run at once.
package turn
