package slackbot

import (
	"fmt"
	"testing"

	"github.com/askrepo/askrepo/internal/session"
)

// The panel cache keeps the threads used last and forgets the others (a
// forgotten thread reads its channel in view back from Slack), so a
// process that sees many panel threads does not grow with them.
func TestPanelThreadsForgetTheLeastRecentlyUsed(t *testing.T) {
	p := panelThreads{max: 3}
	key := func(i int) session.Key { return session.Key{Team: "T1", Channel: "D1", Thread: fmt.Sprint(i)} }
	for i := range 3 {
		p.set(key(i), fmt.Sprintf("C%d", i))
	}
	if _, ok := p.get(key(0)); !ok { // 0 is now the most recently used
		t.Fatal("thread 0 forgotten while under the limit")
	}
	p.set(key(3), "C3")
	if _, ok := p.get(key(1)); ok {
		t.Error("thread 1, the least recently used, is still held past the limit")
	}
	for _, i := range []int{0, 2, 3} {
		if got, ok := p.get(key(i)); !ok || got.context != fmt.Sprintf("C%d", i) {
			t.Errorf("thread %d = %+v, %v; want its channel C%d", i, got, ok, i)
		}
	}
	if !p.title(key(3)) || p.title(key(3)) {
		t.Error("a thread's title is marked once")
	}
	if p.lru.Len() != 3 || len(p.m) != 3 {
		t.Errorf("holds %d threads (%d in the map); want 3", p.lru.Len(), len(p.m))
	}
}
