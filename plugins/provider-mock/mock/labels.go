package mock

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Label detection.
//
// A triage or classification prompt lists the labels to choose from. The
// mock finds such a list after a trigger phrase and answers with one of its
// labels, chosen by the words of the last user message. Trigger phrases (any
// case):
//
//	one of / any of / each of            "Classify it into one of: a, b, c"
//	either                               "Answer with either "spam" or "ham""
//	choose / pick / select from|between  "Choose from: a, b, c"
//	classify|categorize|label|tag|triage|sort … as|into
//	route|assign … to
//	labels|categories|classes|options|choices|values|intents|tags|topics|
//	buckets|queues|teams|departments|sentiments, followed by ":" (within 30
//	characters), by "are"/"is"/"include", or by a bracket
//	                                     "Labels: a, b" "Categories are a and b"
//	respond|reply|answer|output|return with … :
//
// "either" only counts after a verb such as answer, respond, classify or
// choose in the same sentence ("write about either cats or dogs" is not a
// label list), and its items are at most two words.
//
// After the trigger, filler words ("the following", "these categories"),
// a short run of words ending in a colon ("these support teams:") and one
// colon are skipped; the list is then either inline (up to the end of
// the sentence or line; items separated by commas, semicolons, pipes,
// slashes or a final "or"/"and", or given in quotes or brackets) or a block
// of bulleted, numbered or plain short lines on the following lines. An item
// may carry a description ("billing: invoices and refunds", "bug - something
// broken", "billing (payments)"): the label is the part before it, and the
// description's words count as extra keywords. Items must look like labels:
// at most four words, no sentence punctuation, not starting with an article
// or pronoun. At least two items make a list.
var triggerPatterns = []struct{ heads, re string }{
	{"one any each exactly", `^(?:exactly )?(?:one|any|each) of\b`},
	{"either", `^either\b`},
	{"choose pick select", `^(?:choose|pick|select)(?: one)? (?:from|between|among)\b`},
	{"classify classified categorize categorise categorized categorised triage sort label tag",
		`^(?:classify|classified|categori[sz]e|categori[sz]ed|triage|sort|label|tag)\b[^.\n:?!]{0,80}?\b(?:as|into)\b`},
	{"route assign", `^(?:route|assign)\b[^.\n:?!]{0,80}?\bto\b`},
	{"label labels category categories classes options choices values intent intents tags topics buckets queues teams departments sentiment sentiments",
		`^(?:labels?|categories|category|classes|options|choices|values|intents?|tags|topics|buckets|queues|teams|departments|sentiments?)\b(?:\s+(?:are|is|include)\b|\s*[(\[]|[^.\n:?!]{0,30}:)`},
	{"respond reply answer output return",
		`^(?:respond|reply|answer|output|return)\s+(?:with\s*)?(?:only\s+|just\s+|exactly\s+)?(?:one\s+(?:word|label|category|of)\s*)?:`},
}

// triggerByHead maps the first word of a trigger phrase to the anchored
// patterns that start with it: they only run where such a word starts,
// which keeps the common request without labels cheap.
var triggerByHead = func() map[string][]*regexp.Regexp {
	m := map[string][]*regexp.Regexp{}
	for _, p := range triggerPatterns {
		re := regexp.MustCompile(p.re)
		for _, h := range strings.Fields(p.heads) {
			m[h] = append(m[h], re)
		}
	}
	return m
}()

// triggers returns the [start, end) spans of the trigger phrases in lower,
// in order; they may overlap ("route it to one of: ...").
func triggers(lower string) [][2]int {
	var out [][2]int
	for i := 0; i < len(lower); {
		if !isASCIILetter(lower[i]) || (i > 0 && isWordByte(lower[i-1])) {
			i++
			continue
		}
		j := i
		for j < len(lower) && isASCIILetter(lower[j]) {
			j++
		}
		for _, re := range triggerByHead[lower[i:j]] {
			if loc := re.FindStringIndex(lower[i:]); loc != nil {
				out = append(out, [2]int{i, i + loc[1]})
			}
		}
		i = j
	}
	return out
}

// eitherVerbRE must precede "either" in its sentence for an either/or list
// to count as labels.
var eitherVerbRE = regexp.MustCompile(`\b(?:answer|respond|reply|output|return|say|classify|label|mark|tag|choose|pick|select|decide|is it|is this|categori[sz]e)\b`)

// fillerWords may sit between a trigger and its list.
var fillerWords = setOf(`the following these those below listed allowed possible available predefined given
labels label categories category classes class options option choices values intents intent tags topics
one of either from exactly only single a an are is include includes as into to between among with using
this list support ticket tickets message messages email emails text it them each teams team departments department
groups group queues queue buckets bucket
1 2 3 4 5 6 7 8 9 10 two three four five six seven eight nine ten`)

// badFirstWords never start a label: an item starting with one is prose.
var badFirstWords = setOf(`a an the my your our their his her its this that these those i we you he she it they
me us them to of in on for with is are was were be if when please what how why which who`)

type label struct {
	text string // as written in the prompt
	desc string // optional description
}

// labelList is a list found in one message, with the span of the
// instruction that introduced it.
type labelList struct {
	items      []label
	start, end int
}

// detectLabels finds the first valid label list in text.
func detectLabels(text string) (labelList, bool) {
	lower := asciiLower(text)
	for _, loc := range triggers(lower) {
		either := strings.HasPrefix(lower[loc[0]:], "either")
		if either && !eitherVerbRE.MatchString(lower[sentenceStart(lower, loc[0]):loc[0]]) {
			continue // "a haiku about either cats or dogs" is not a choice of answers
		}
		pos := loc[1]
		if c := lower[pos-1]; c == '(' || c == '[' {
			pos--
		}
		items, end, ok := parseListAt(text, lower, pos, either, 0)
		if !ok {
			continue
		}
		return labelList{items: items, start: instructionStart(text, lower, loc[0], items), end: end}, true
	}
	return labelList{}, false
}

// instructionStart extends the instruction back to the start of its
// sentence, and over a directly preceding question on the same line when
// that question names a label ("Is this email spam? Answer with either ...").
func instructionStart(text, lower string, i int, items []label) int {
	j := sentenceStart(text, i)
	if j >= 2 && text[j-2] == '?' {
		k := sentenceStart(text, j-2)
		q := lower[k : j-1]
		for _, it := range items {
			if findPhrase(q, asciiLower(it.text)) >= 0 {
				return k
			}
		}
	}
	return j
}

func sentenceStart(s string, i int) int {
	for j := i; j > 0; j-- {
		c := s[j-1]
		if c == '\n' {
			return j
		}
		if isHSpace(c) && j >= 2 && (s[j-2] == '.' || s[j-2] == '?' || s[j-2] == '!') {
			return j
		}
	}
	return 0
}

// skipFiller skips filler words and at most one colon (after which nothing
// more is skipped).
func skipFiller(lower string, i int) int {
	for {
		j := skipHSpace(lower, i)
		if j < len(lower) && lower[j] == ':' {
			return j + 1
		}
		k := j
		for k < len(lower) && (isASCIILetter(lower[k]) || isASCIIDigit(lower[k])) {
			k++
		}
		if k == j || !fillerWords[lower[j:k]] {
			return i
		}
		i = k
	}
}

// skipToColon skips a short run of words that ends in a colon on the same
// line ("one of these support teams: ..."), as long as the run is not itself
// a list ("billing or bug: <text>").
func skipToColon(lower string, pos int) int {
	end := pos + 48
	if end > len(lower) {
		end = len(lower)
	}
	seg := lower[pos:end]
	i := strings.IndexByte(seg, ':')
	if i < 0 {
		return pos
	}
	seg = seg[:i]
	if strings.ContainsAny(seg, ",;|/.?!\n\r()[]\"'`") || len(strings.Fields(seg)) > 3 {
		return pos
	}
	if strings.Contains(" "+seg+" ", " or ") || strings.Contains(" "+seg+" ", " and ") {
		return pos
	}
	return pos + i + 1
}

func parseListAt(text, lower string, pos int, either bool, depth int) ([]label, int, bool) {
	pos = skipFiller(lower, pos)
	pos = skipToColon(lower, pos)
	j := skipHSpace(text, pos)
	if j >= len(text) || text[j] == '\n' || text[j] == '\r' {
		return parseBlock(text, j)
	}
	switch text[j] {
	case '[', '(', '{':
		closer := matchingBracket(text, j)
		if closer < 0 {
			return nil, 0, false
		}
		if items, ok := parseInline(text[j+1:closer], either); ok {
			return items, closer + 1, true
		}
		// "Labels (pick one): a, b, c"
		k := skipHSpace(text, closer+1)
		if depth == 0 && k < len(text) && text[k] == ':' {
			return parseListAt(text, lower, k+1, either, depth+1)
		}
		return nil, 0, false
	}
	end := inlineEnd(text, j)
	items, ok := parseInline(text[j:end], either)
	if end < len(text) && strings.IndexByte(".?!:", text[end]) >= 0 {
		end++ // the terminator belongs to the instruction
	}
	return items, end, ok
}

func matchingBracket(s string, i int) int {
	open := s[i]
	closeB := byte(')')
	switch open {
	case '[':
		closeB = ']'
	case '{':
		closeB = '}'
	}
	depth := 0
	for k := i; k < len(s) && k < i+1000; k++ {
		switch s[k] {
		case open:
			depth++
		case closeB:
			depth--
			if depth == 0 {
				return k
			}
		case '\n':
			if open == '(' {
				return -1
			}
		}
	}
	return -1
}

// inlineEnd finds where an inline list starting at j ends: at a line break,
// at a sentence end ('.', '?', '!' followed by space or the end), or at a
// colon followed by space (what follows is the text to classify).
func inlineEnd(s string, j int) int {
	var quote byte
	depth := 0
	for k := j; k < len(s); k++ {
		c := s[k]
		if quote != 0 {
			if c == quote {
				quote = 0
			} else if c == '\n' {
				return k
			}
			continue
		}
		switch c {
		case '\n', '\r':
			return k
		case '"', '`':
			quote = c
		case '(', '[':
			depth++
		case ')', ']':
			if depth == 0 {
				return k // "(one of: a, b, c)"
			}
			depth--
		case '.', '?', '!', ':':
			if depth == 0 && (k+1 == len(s) || isHSpace(s[k+1]) || s[k+1] == '\n' || s[k+1] == '\r') {
				return k
			}
		}
	}
	return len(s)
}

// parseInline parses an inline list.
func parseInline(seg string, either bool) ([]label, bool) {
	seg = strings.TrimSpace(seg)
	if seg == "" {
		return nil, false
	}
	maxWords := 4
	if either {
		maxWords = 2
	}
	var raw []string
	if q := quotedItems(seg); len(q) >= 2 {
		raw = q
	} else {
		raw = splitTop(seg)
	}
	var items []label
	singleWords := true
	for i, r := range raw {
		lb, ok, skip := cleanItem(r, maxWords)
		if skip {
			continue
		}
		if !ok && i == len(raw)-1 && i >= 2 && singleWords {
			// "billing, bug or feature_request based on the text below"
			f := strings.Fields(r)
			for len(f) > 0 && (f[0] == "or" || f[0] == "and" || f[0] == "either") {
				f = f[1:]
			}
			if len(f) > maxWords {
				lb, ok, skip = cleanItem(f[0], 1)
			}
		}
		if skip {
			continue
		}
		if !ok {
			return nil, false
		}
		if strings.IndexByte(lb.text, ' ') >= 0 {
			singleWords = false
		}
		items = appendLabel(items, lb)
	}
	return items, len(items) >= 2 && len(items) <= 50
}

func appendLabel(items []label, lb label) []label {
	for _, it := range items {
		if strings.EqualFold(it.text, lb.text) {
			return items
		}
	}
	return append(items, lb)
}

// quotedItems returns the strings in double quotes, backticks or curly
// quotes in seg, or, when there are none, in single quotes that are not
// apostrophes.
func quotedItems(seg string) []string {
	var out []string
	for i := 0; i < len(seg); {
		c := seg[i]
		var closeQ string
		var openLen int
		switch {
		case c == '"' || c == '`':
			closeQ, openLen = string(c), 1
		case strings.HasPrefix(seg[i:], "“"):
			closeQ, openLen = "”", len("“")
		default:
			i++
			continue
		}
		k := strings.Index(seg[i+openLen:], closeQ)
		if k < 0 {
			break
		}
		out = append(out, seg[i+openLen:i+openLen+k])
		i += openLen + k + len(closeQ)
	}
	if len(out) >= 2 {
		return out
	}
	out = out[:0]
	for i := 0; i < len(seg); i++ {
		if seg[i] != '\'' || (i > 0 && (isASCIILetter(seg[i-1]) || isASCIIDigit(seg[i-1]))) {
			continue
		}
		k := strings.IndexByte(seg[i+1:], '\'')
		for k >= 0 && i+1+k+1 < len(seg) && isASCIILetter(seg[i+1+k+1]) {
			// an apostrophe inside a word, not the closing quote
			k2 := strings.IndexByte(seg[i+1+k+1:], '\'')
			if k2 < 0 {
				k = -1
				break
			}
			k += 1 + k2
		}
		if k < 0 {
			break
		}
		out = append(out, seg[i+1:i+1+k])
		i += k + 1
	}
	return out
}

// splitTop splits an inline list at top-level commas, semicolons and pipes
// (or slashes when there is nothing else), then splits the last part at
// " or " / " and ".
func splitTop(seg string) []string {
	var parts []string
	depth, last := 0, 0
	for k := 0; k < len(seg); k++ {
		switch seg[k] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		case ',', ';', '|':
			if depth == 0 {
				parts = append(parts, seg[last:k])
				last = k + 1
			}
		}
	}
	parts = append(parts, seg[last:])
	if len(parts) == 1 && strings.Count(seg, "/") >= 1 && !strings.Contains(seg, " / ") && !strings.Contains(asciiLower(seg), "and/or") {
		parts = strings.Split(seg, "/")
	} else if len(parts) == 1 && strings.Contains(seg, " / ") {
		parts = strings.Split(seg, " / ")
	}
	lastPart := parts[len(parts)-1]
	if sub := splitOrAnd(lastPart); len(sub) > 1 {
		parts = append(parts[:len(parts)-1], sub...)
	}
	return parts
}

func splitOrAnd(s string) []string {
	lower := asciiLower(s)
	var out []string
	last := 0
	for k := 0; k < len(lower); k++ {
		if lower[k] != ' ' {
			continue
		}
		for _, sep := range [...]string{" or ", " and ", " & "} {
			if strings.HasPrefix(lower[k:], sep) {
				if strings.TrimSpace(s[last:k]) != "" {
					out = append(out, s[last:k])
				}
				last = k + len(sep)
				k = last - 1
				break
			}
		}
	}
	return append(out, s[last:])
}

const itemTrim = " \t\r\n\"'`*“”‘’.,;:"

var descSeparators = [...]string{" - ", " – ", " — ", ": ", " (", " = ", " → ", " -> "}

// cleanItem turns one raw list entry into a label. skip reports an entry to
// ignore ("etc.").
func cleanItem(s string, maxWords int) (lb label, ok, skip bool) {
	s = strings.Trim(s, itemTrim)
	low := asciiLower(s)
	for _, p := range [...]string{"or ", "and ", "either ", "& "} {
		if strings.HasPrefix(low, p) {
			s, low = strings.TrimSpace(s[len(p):]), strings.TrimSpace(low[len(p):])
		}
	}
	if low == "etc" || low == "..." || low == "…" || low == "" {
		return label{}, false, low != ""
	}
	text, desc := s, ""
	best := -1
	sepLen := 0
	for _, sep := range descSeparators {
		if i := strings.Index(s, sep); i > 0 && (best < 0 || i < best) {
			best, sepLen = i, len(sep)
		}
	}
	if best > 0 {
		text, desc = s[:best], strings.Trim(s[best+sepLen:], " \t)")
	}
	text = strings.Trim(text, itemTrim)
	if !validLabel(text, maxWords) {
		return label{}, false, false
	}
	return label{text: text, desc: desc}, true, false
}

func validLabel(s string, maxWords int) bool {
	if s == "" || len(s) > 48 || !utf8.ValidString(s) {
		return false
	}
	if strings.ContainsAny(s, "?!{}<>\"\n\r\t") {
		return false
	}
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > maxWords {
		return false
	}
	if badFirstWords[asciiLower(f[0])] {
		return false
	}
	for _, r := range s {
		if isWordRune(r) {
			return true
		}
	}
	return false
}

// parseBlock parses a list on the lines after index j (a line break or the
// end of text): bulleted ("-", "*", "•", "1.", "a)") or plain short lines,
// optionally after one blank line, up to the first line that does not fit.
func parseBlock(text string, j int) ([]label, int, bool) {
	i := j
	if i < len(text) && text[i] == '\r' {
		i++
	}
	if i < len(text) && text[i] == '\n' {
		i++
	}
	var items []label
	end, mode, blanks := j, -1, 0
	for i < len(text) && len(items) < 50 {
		lineEnd := strings.IndexByte(text[i:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text)
		} else {
			lineEnd += i
		}
		next := lineEnd + 1
		t := strings.TrimSpace(text[i:lineEnd])
		if t == "" {
			if len(items) == 0 && blanks == 0 {
				blanks++
				i = next
				continue
			}
			break
		}
		rest, bullet := stripBullet(t)
		m := 0
		maxWords := 3
		if bullet {
			m, maxWords = 1, 4
		}
		if mode == -1 {
			mode = m
		} else if m != mode {
			break
		}
		lb, ok, skip := cleanItem(rest, maxWords)
		if skip {
			end, i = lineEnd, next
			continue
		}
		if !ok {
			break
		}
		items = appendLabel(items, lb)
		end, i = lineEnd, next
	}
	return items, end, len(items) >= 2
}

// stripBullet removes a list marker: "-", "*", "+", "•", "·", "–", "1.",
// "1)", "a)", "a.".
func stripBullet(t string) (string, bool) {
	for _, b := range [...]string{"- ", "* ", "+ ", "• ", "· ", "– ", "— "} {
		if strings.HasPrefix(t, b) {
			return strings.TrimSpace(t[len(b):]), true
		}
	}
	k := 0
	for k < len(t) && k < 3 && isASCIIDigit(t[k]) {
		k++
	}
	if k == 0 && len(t) > 2 && isASCIILetter(t[0]) {
		k = 1
	}
	if k > 0 && k+1 < len(t) && (t[k] == '.' || t[k] == ')') && isHSpace(t[k+1]) {
		return strings.TrimSpace(t[k+1:]), true
	}
	return t, false
}
