package schemagen

import (
	"fmt"
	"regexp"
	"strings"
)

// words is the vocabulary of generated free text: plain lowercase ASCII so
// that one character is one byte and lengths are easy to meet.
var words = []string{
	"alpha", "bravo", "cobalt", "delta", "ember", "falcon", "garnet", "harbor", "indigo",
	"juniper", "kestrel", "lumen", "meadow", "nimbus", "orchid", "pebble", "quartz", "river",
	"summit", "timber", "umber", "velvet", "willow", "xenon", "yonder", "zephyr",
}

// str generates a string for a conjunction: from the first pattern, else
// the first known format, else words fitted to the length bounds. leaf
// checks every node afterwards.
func (g *generator) str(conj []*node) (any, error) {
	minLen, maxLen := 0, -1
	var pattern *regexp.Regexp
	format := ""
	for _, n := range conj {
		minLen = max(minLen, n.minLength)
		if n.maxLength >= 0 && (maxLen < 0 || n.maxLength < maxLen) {
			maxLen = n.maxLength
		}
		if pattern == nil && n.pattern != nil {
			pattern = n.pattern
		}
		if format == "" && n.format != "" {
			format = n.format
		}
	}
	if maxLen >= 0 && minLen > maxLen {
		return nil, errUnsatisfiable
	}
	if g.work += minLen / 16; g.work > workBudget || !g.b.spend(minLen/16) {
		return nil, errUnsatisfiable
	}
	if pattern != nil {
		for try := 0; try < 32; try++ {
			s := generateRegex(g.rng, pattern, minLen)
			if allMatch(conj, s, g.b) {
				return s, nil
			}
		}
		return nil, errUnsatisfiable
	}
	if s, ok := g.formatted(format); ok {
		return s, nil
	}
	return g.text(minLen, maxLen), nil
}

// text makes words separated by spaces with a length in [minLen, maxLen]
// (maxLen < 0: unbounded), aiming at a few words.
func (g *generator) text(minLen, maxLen int) string {
	target := minLen + g.rng.IntN(24)
	if maxLen >= 0 {
		target = min(target, maxLen)
	}
	var b strings.Builder
	for b.Len() < target {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[g.rng.IntN(len(words))])
	}
	s := b.String()
	if len(s) > target {
		s = strings.TrimRight(s[:target], " ")
	}
	for len(s) < minLen { // trimming a space can fall short by one
		s += "x"
	}
	return s
}

// formatted produces a value of a known format.
func (g *generator) formatted(format string) (string, bool) {
	r := g.rng
	word := func() string { return words[r.IntN(len(words))] }
	switch format {
	case "date-time":
		return fmt.Sprintf("20%02d-%02d-%02dT%02d:%02d:%02dZ", 20+r.IntN(10), 1+r.IntN(12), 1+r.IntN(28),
			r.IntN(24), r.IntN(60), r.IntN(60)), true
	case "date":
		return fmt.Sprintf("20%02d-%02d-%02d", 20+r.IntN(10), 1+r.IntN(12), 1+r.IntN(28)), true
	case "time":
		return fmt.Sprintf("%02d:%02d:%02dZ", r.IntN(24), r.IntN(60), r.IntN(60)), true
	case "uuid":
		var b [16]byte
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		b[6] = b[6]&0x0f | 0x40 // version 4
		b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), true
	case "email", "idn-email":
		return word() + "." + word() + "@example.com", true
	case "hostname", "idn-hostname":
		return word() + ".example.com", true
	case "uri", "url", "iri":
		return "https://example.com/" + word(), true
	case "uri-reference", "iri-reference":
		return "/" + word() + "/" + word(), true
	case "ipv4":
		return fmt.Sprintf("192.0.2.%d", 1+r.IntN(254)), true
	case "ipv6":
		return fmt.Sprintf("2001:db8::%x", 1+r.IntN(0xfffe)), true
	case "duration":
		return fmt.Sprintf("P%dDT%dH", 1+r.IntN(30), r.IntN(24)), true
	case "json-pointer":
		return "/" + word() + "/" + word(), true
	case "regex":
		return "^[a-z]+$", true
	}
	return "", false
}
