package main

import (
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot"
)

// sharedThreads is what the bot coordinates with other replicas through:
// the store's leases and queues when the store is one several processes
// share (PostgreSQL), nil otherwise. SQLite and memory implement leases
// too, but a SQLite file is one replica's: going through leases there
// would only make a restart after a crash wait out its predecessor's
// lease before it resumes the cut-off turns, which the single-process
// recovery does at once.
func sharedThreads(store session.Backend) slackbot.Shared {
	if pg, ok := store.(*session.Postgres); ok {
		return pg
	}
	return nil
}
