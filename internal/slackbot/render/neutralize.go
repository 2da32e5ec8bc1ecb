package render

import "strings"

// This file defuses what would notify people: Slack's mention tokens and
// the bare broadcast words, in every form Slack might read them.

// zeroWidthSpace breaks a mention token without changing what a reader sees.
const zeroWidthSpace = "\u200b"

// Neutralize defuses the Slack mention tokens in s that would notify people
// (<!channel>, <!here>, <!everyone>, <!subteam^…>, <@U…>, <#C…>) by putting a
// zero-width space after the "<", and the bare words @here, @channel and
// @everyone by putting one after the "@". A model can be talked into writing these by
// the files it reads (prompt injection), and a bot must never ping a channel
// on someone else's behalf. Escaped forms ("&lt;!here&gt;", "&#60;", "&#x3C;")
// are defused too:
// Slack's docs do not say whether a markdown block decodes entities before it
// looks for tokens, so assume it may. Ordinary text and code, including "<"
// that does not start such a token ("a < b", "<-ch", "<div>", "<!--",
// "<!DOCTYPE"), are returned unchanged.
func Neutralize(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		after := 0
		switch {
		case s[i] == '@':
			if broadcastWord(s, i) {
				b.WriteString(s[last : i+1])
				b.WriteString(zeroWidthSpace)
				last = i + 1
			}
			continue
		case s[i] == '<':
			after = i + 1
		case s[i] == '&':
			n := ltEntity(s[i:])
			if n == 0 {
				// "&#64;here" is "@here" to whatever decodes entities.
				if n = charRef(s[i:], '@', "&commat;"); n > 0 && !wordBefore(s, i) && broadcastAt(s, i+n) {
					b.WriteString(s[last : i+n])
					b.WriteString(zeroWidthSpace)
					last = i + n
				}
				continue
			}
			after = i + n
		default:
			continue
		}
		if startsPingToken(s[after:]) {
			b.WriteString(s[last:after])
			b.WriteString(zeroWidthSpace)
			last = after
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// Typed is text a person typed, to show as typed in mrkdwn: Slack's own
// escaping of &, < and >, so that it holds no mention, channel or link
// token, and its bare broadcast words defused. The bot posts it, and a
// channel may let the bot broadcast where it does not let the person.
func Typed(s string) string { return breakBroadcasts(mrkdwnEscaper.Replace(s)) }

// breakBroadcasts defuses the bare @here, @channel and @everyone in s, as
// Neutralize does, for text whose "<" and "&" are already escaped.
func breakBroadcasts(s string) string {
	var b strings.Builder
	last := 0
	for i := strings.IndexByte(s, '@'); i >= 0; {
		if broadcastWord(s, i) {
			b.WriteString(s[last : i+1])
			b.WriteString(zeroWidthSpace)
			last = i + 1
		}
		j := strings.IndexByte(s[i+1:], '@')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// broadcastWord reports whether s[i] is the "@" of a bare @here, @channel
// or @everyone (any case, a word of its own). Slack turns those into
// broadcasts where it links names (link_names, a client's composer), and
// the docs do not say the markdown block never does.
func broadcastWord(s string, i int) bool {
	return !wordBefore(s, i) && broadcastAt(s, i+1)
}

// wordBefore reports whether s[:i] ends in a word character: an "@" there
// is part of an address (ops@here.example), not a broadcast.
func wordBefore(s string, i int) bool {
	return i > 0 && (isWordByteBefore(s, i) || s[i-1] == '_')
}

// broadcastAt reports whether s[j:] starts with here, channel or
// everyone (any case) as a whole word.
func broadcastAt(s string, j int) bool {
	for _, kw := range []string{"here", "channel", "everyone"} {
		end := j + len(kw)
		if end <= len(s) && strings.EqualFold(s[j:end], kw) && (end == len(s) || !isWordByte(s, end) && s[end] != '_') {
			return true
		}
	}
	return false
}

// ltEntity returns the length of the HTML character reference for "<" that
// s starts with ("&lt;" in any case, "&#60;", "&#x3c;", with leading zeros),
// or 0.
func ltEntity(s string) int { return charRef(s, '<', "&lt;") }

// charRef returns the length of the HTML character reference for c that s
// starts with: named (in any case), decimal or hexadecimal, with leading
// zeros; or 0.
func charRef(s string, c byte, named string) int {
	if len(s) >= len(named) && strings.EqualFold(s[:len(named)], named) {
		return len(named)
	}
	if !strings.HasPrefix(s, "&#") {
		return 0
	}
	i, base := 2, 10
	if i < len(s) && (s[i] == 'x' || s[i] == 'X') {
		i, base = i+1, 16
	}
	start, v := i, 0
	for ; i < len(s) && i-start < 8; i++ {
		d := strings.IndexByte("0123456789abcdef", s[i]|0x20)
		if d < 0 || d >= base {
			break
		}
		v = v*base + d
	}
	if i == start || i >= len(s) || s[i] != ';' || v != int(c) {
		return 0
	}
	return i + 1
}

// startsPingToken reports whether s, just after a "<", continues as a token
// that notifies: a special mention (!channel, !here, !everyone, !group,
// !subteam^…, in any case), a user (@U…, @W…, @B… then an ID character) or a
// channel (#C…, #G…, #D…).
func startsPingToken(s string) bool {
	if len(s) < 3 {
		return false
	}
	switch s[0] {
	case '!':
		// "date^" is no mention, but its optional link hides behind the
		// date it shows: <!date^1700000000^{date}^https://evil.example|x>.
		for _, kw := range []string{"channel", "here", "everyone", "group", "subteam^", "date^"} {
			if len(s) > len(kw) && strings.EqualFold(s[1:1+len(kw)], kw) {
				return true
			}
		}
	case '@':
		return strings.IndexByte("UWB", s[1]) >= 0 && isIDByte(s[2])
	case '#':
		return strings.IndexByte("CGD", s[1]) >= 0 && isIDByte(s[2])
	}
	return false
}

// isIDByte reports whether c can be part of a Slack ID (upper case, digits).
func isIDByte(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
