package main

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// Ctrl-C reaches run as a value of its context rather than by cancelling
// it, because what it means depends on the command: bot chat stops only
// the answer being written; everything else stops. Tests send on the
// channel instead of signalling the process.

type interruptsKey struct{}

func withInterrupts(ctx context.Context, ch <-chan os.Signal) context.Context {
	return context.WithValue(ctx, interruptsKey{}, ch)
}

// interrupts is the channel Ctrl-C arrives on; nil (never ready) without
// one.
func interrupts(ctx context.Context) <-chan os.Signal {
	ch, _ := ctx.Value(interruptsKey{}).(<-chan os.Signal)
	return ch
}

// errInterrupted is the cause of a context cancelled by Ctrl-C.
var errInterrupted = errors.New("interrupted")

// cancelOnInterrupt cancels ctx at the first Ctrl-C, until ctx ends.
func cancelOnInterrupt(ctx context.Context, cancel context.CancelCauseFunc) {
	select {
	case <-interrupts(ctx):
		cancel(errInterrupted)
	case <-ctx.Done():
	}
}

// watchInterrupt cancels with errInterrupted at a Ctrl-C until the
// returned stop is called; once stop returns, no Ctrl-C is taken any more,
// so the next one reaches whoever reads the channel then.
func watchInterrupt(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-interrupts(ctx):
			cancel(errInterrupted)
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// stopCause is how a command whose context ended reports it: stopped by
// SIGINT after Ctrl-C, by SIGTERM otherwise.
func stopCause(ctx context.Context) stopped {
	if errors.Is(context.Cause(ctx), errInterrupted) {
		return stopped{syscall.SIGINT}
	}
	return stopped{syscall.SIGTERM}
}
