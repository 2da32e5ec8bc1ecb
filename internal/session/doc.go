// Package session maps a Slack thread to an agent session and keeps what a
// thread needs across turns, restarts and replicas: its history and usage,
// its turns (running, ended, handed on), the lease that lets one replica
// work on it at a time and the queue of messages waiting for it, stop
// requests, the inbox of events recorded before they are acknowledged, and
// the dedupe keys of events already seen.
//
// Store is what the service reads and writes; Backend adds the leases,
// queues, stops and activity a replicated service needs. Memory, SQLite
// and Postgres implement Backend with the same behaviour, which the suite
// in sessiontest checks; they speak plain Go types, and no SQL dialect
// leaks through them. The SQL stores share their row handling (sqlrows.go)
// and keep their statements apart, where the dialects differ.
//
// A store bounds what it keeps (Limits), but does not decide what is sent
// to the model: estimating tokens and compacting a history is
// internal/budget's job, done by the callers. This package imports only
// internal/llm from the project, and must not import internal/budget, the
// agent, the tools or a front end.
package session
