// Package slacktest is a hermetic fake of Slack for end-to-end tests of the bot: an
// httptest server that the real slack-go client talks to, speaking both the Web API
// (srv.URL+"/api/") and Socket Mode (apps.connections.open plus a gorilla websocket).
//
// It exists because slack-go's own slacktest package sends no hello and no pings (so
// the client's ping watchdog recycles the socket), fakes neither chat.update nor
// conversations.replies, and gives tests no way to read back what the bot posted.
//
// What the fake does, in Slack's own wire format:
//   - Web API methods the bot uses (auth.test, chat.*, reactions.*,
//     assistant.threads.setStatus, conversations.replies/info, users.info, the
//     streaming chat.startStream/appendStream/stopStream with their chunks, 12,000
//     character limit and message_not_in_streaming_state after a stop or an age,
//     agents.sessions.setStatus and the agent_session_stopped event), with token
//     checks, Slack's error codes for the mistakes a bot can make (no_text,
//     invalid_blocks, markdown_text_conflict, message_not_found, already_reacted, …),
//     monotonically increasing message timestamps and a thread-aware message store.
//   - Socket Mode: single-use tickets, a hello frame, WebSocket PINGs on a ticker (the
//     only timer in the package), events_api / interactive envelopes, acks recorded
//     with their latency, disconnect frames and abrupt drops.
//   - A person's messages as Slack delivers them: Mention (an app_mention naming the
//     bot) and Reply (a message event in a thread), each returning its ts, and
//     MentionTo and ReplyTo for one connection of several.
//   - Interactivity: button clicks and feedback-button clicks (ClickFeedback) as
//     block_actions, each with a trigger_id that views.open accepts once within
//     Slack's 3-second window (expired_trigger_id after it), and the opened modals
//     submitted back as view_submission (SubmitView).
//   - Failure injection per method (429 with Retry-After, HTTP 5xx, Slack error codes).
//   - Waiting helpers driven by a broadcast on every recorded change, so tests never
//     sleep.
//
// Every method of Server is safe for concurrent use. The package imports slack-go only
// to offer Server.Client; it must not import any other askrepo package, so that the
// bot's tests can use it without cycles.
package slacktest
