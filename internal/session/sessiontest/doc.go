// Package sessiontest is the contract every session backend must meet, as
// a test suite each backend runs against itself (Memory, SQLite and
// PostgreSQL), so all of them behave the same to the service.
//
// RunStoreTests covers, on the store's injected clock:
//
//   - sessions: created by a thread's first turn, listed most recent first
//     without their history, their commit set, their history replaced,
//     purged once idle together with their turns and expired keys;
//   - turns and history: a turn starts with its question, its steps append
//     in order and add up their usage, it ends once (only done turns
//     count), unfinished turns are listed oldest first, and a cut-off turn
//     is handed to a new one exactly once even when two callers race;
//     messages come back byte for byte and never alias the store's copy;
//   - dedupe: a key is first seen once, again only after its time to live,
//     and once among concurrent callers;
//   - leases and queues: a thread's lease is exclusive and expires, racing
//     acquirers and claimers win once, a dead owner's unfinished turns and
//     queued messages are claimed, a queue keeps its order and hands the
//     thread on without stranding a message, and a thread is busy while
//     it has either;
//   - stops: a stop requested on one replica is seen on the other;
//   - the inbox: an event is received once until its key expires, and
//     events whose hold has passed are claimed oldest first, each by one
//     claimer;
//   - answer parts: recorded in order, and carried to a continued turn;
//   - ratings of answers (session.Feedbacks): stored with their turn, one
//     per user and turn, refused for an unknown turn, listed newest first
//     with what they rate, gone with a purged thread;
//   - durability: with Suite.Durable, everything survives a close and a
//     reopen; with Suite.Shared, the races run across two handles on the
//     same data, as two replicas have.
//
// It is imported only from tests. It imports session, llm and go-cmp, and
// nothing of the service above them.
package sessiontest
