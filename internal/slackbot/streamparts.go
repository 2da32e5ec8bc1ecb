package slackbot

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// A turn's recorded parts (Store.AddPart) hold, besides the messages the
// message UI posted, two records of the streamed UI:
//
//	s:TS          a streamed message was started (a restart closes it)
//	s:TS:N:HASH   it was completed holding N bytes of text, of that hash
//
// A message is completed when it is full or Slack closed it, and its text
// is then final. A restart that has the turn's answer stored shows again
// only what no completed message holds.

// streamDone is a completed streamed message's record.
type streamDone struct {
	n    int
	hash string
}

// streamRecords splits a turn's recorded parts into the answer messages
// posted, the streamed messages started, and the ones completed, in order.
func streamRecords(parts []string) (posted int, streams []string, done []streamDone) {
	for _, p := range parts {
		rest, ok := strings.CutPrefix(p, streamPartPrefix)
		if !ok {
			posted++
			continue
		}
		f := strings.Split(rest, ":")
		switch len(f) {
		case 1:
			streams = append(streams, f[0])
		case 3:
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				done = append(done, streamDone{n: n, hash: f[2]})
			}
		}
	}
	return posted, streams, done
}

// doneRecord is the record of the completed message ts holding text.
func doneRecord(ts, text string) string {
	return fmt.Sprintf("%s%s:%d:%s", streamPartPrefix, ts, len(text), textHash(text))
}

func textHash(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return strconv.FormatUint(h.Sum64(), 36)
}

// shownBefore is how much of the rendered answer r the completed messages
// already show, from its start: as long as each holds the next piece of r
// exactly. Text they hold that is not r's (the model wrote another answer
// after the restart, or text before its tools) shows nothing of it.
func shownBefore(r string, done []streamDone) int {
	off := 0
	for _, d := range done {
		if off+d.n > len(r) || textHash(r[off:off+d.n]) != d.hash {
			break
		}
		off += d.n
	}
	return off
}
