package policy

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// What a call costs, in CEL's units: one for the call, a tenth of a unit
// per byte of text it reads, and one per byte of text (or list element) it
// makes. Most calls are charged that way, the text they make after they
// return (it is never more than what they read). The calls below can make
// or do far more than they read, or are charged more by CEL: their cost is
// computed from their arguments alone, without doing their work, and
// includes what they make, so that the meter refuses them before they run.

// costFunc is what a call with these arguments costs; includesResult says
// the cost counts what the call makes.
type costFunc func(args []ref.Val) (units uint64, includesResult bool)

// costs are the calls charged otherwise than by default, by function name
// (names are unique in svc's environment, and a call on a dyn value has no
// single overload).
var costs = map[string]costFunc{
	"_==_":        costCompare,
	"_!=_":        costCompare,
	"_+_":         costAdd,
	"@in":         costIn,
	"contains":    costContains,
	"matches":     costMatchesRead,
	"format":      costFormat,
	"replace":     costReplace,
	"split":       costSplit,
	"join":        costJoin,
	"indexOf":     costSearch,
	"lastIndexOf": costSearch,
	// These read their text as a list of characters, four bytes each.
	"charAt":    costRunes,
	"substring": costRunes,
	"reverse":   costRunes,
}

func costOf(function, _ string) costFunc {
	if c, ok := costs[function]; ok {
		return c
	}
	return costRead
}

// costRead is the default: the call, and the text it reads.
func costRead(args []ref.Val) (uint64, bool) {
	var n uint64
	for _, a := range args {
		n += textSize(a)
	}
	return 1 + tenth(n), false
}

// costRunes: the call, and its text turned into characters.
func costRunes(args []ref.Val) (uint64, bool) {
	units, _ := costRead(args)
	return units + textSize(args[0]), false
}

// costAdd: a concatenation of texts costs what it makes; of others, one.
func costAdd(args []ref.Val) (uint64, bool) {
	return 1 + textSize(args[0]) + textSize(args[1]), true
}

// costCompare: comparing two texts reads the shorter, two lists or maps
// look at the elements of the smaller.
func costCompare(args []ref.Val) (uint64, bool) {
	return 1 + tenth(min(textSize(args[0]), textSize(args[1]))) + min(sizeOf(args[0]), sizeOf(args[1])), true
}

// costIn: membership in a list looks at each element.
func costIn(args []ref.Val) (uint64, bool) {
	n := uint64(0)
	if l, ok := args[1].(traits.Lister); ok {
		n = sizeOf(l)
	}
	return 1 + tenth(textSize(args[0])) + n, true
}

// costContains: a search for a substring reads the text and the
// substring once (Go's search is linear in practice); CEL's own charge,
// their product, would stop a long system prompt looked for in a long
// message.
func costContains(args []ref.Val) (uint64, bool) {
	return 1 + tenth(textSize(args[0])+textSize(args[1])), true
}

// costSearch: indexOf and lastIndexOf compare the substring at every
// position of the text, which they first turn into characters.
func costSearch(args []ref.Val) (uint64, bool) {
	s, sub := textSize(args[0]), textSize(args[1])
	return 1 + s + tenth(s*sub), true
}

// costMatchesRead: a pattern the request supplies is compiled for the
// call, and matching takes time in proportion to the text's length times
// the size of the compiled program, which a short pattern can make large
// ("(?:\pL{1000})b" is 13 bytes and a thousand instructions, each a search
// of the letters' ranges). So the pattern is compiled here to be measured;
// one that does not compile costs the call and its reading (CEL reports
// the error).
func costMatchesRead(args []ref.Val) (uint64, bool) {
	pattern, ok := args[1].(types.String)
	if !ok {
		return costRead(args)
	}
	re, err := syntax.Parse(string(pattern), syntax.Perl)
	if err != nil {
		return costRead(args)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return costRead(args)
	}
	var steps uint64
	for _, inst := range prog.Inst {
		steps += 1 + uint64(len(inst.Rune))/16
	}
	return (textSize(args[0]) + 1) * (steps + uint64(len(pattern))), true
}

// costFormat: the text format() makes holds its arguments' texts, however
// deep in lists and maps, and the format itself.
func costFormat(args []ref.Val) (uint64, bool) {
	var n uint64
	for _, a := range args {
		n += deepTextSize(a)
	}
	return 1 + n, true
}

// deepTextSize is the length of the texts in v, in its lists and maps
// (keys too) however nested, plus one per element.
func deepTextSize(v ref.Val) uint64 {
	switch v := v.(type) {
	case traits.Lister:
		n, _ := v.Size().(types.Int)
		total := uint64(0)
		for i := types.Int(0); i < n; i++ {
			total += 1 + deepTextSize(v.Get(i))
		}
		return total
	case traits.Mapper:
		total := uint64(0)
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			total += 1 + deepTextSize(k) + deepTextSize(v.Get(k))
		}
		return total
	}
	return textSize(v)
}

// costMatchesWritten: a pattern written in the condition was compiled at
// load; CEL's own charge, by the text's length times the pattern's, one
// unit per four characters of pattern.
func costMatchesWritten(args []ref.Val) (uint64, bool) {
	return 1 + tenth(textSize(args[0])+1)*((textSize(args[1])+3)/4), true
}

// costReplace: the search, and the result, whose length is known from the
// number of matches before anything is built.
func costReplace(args []ref.Val) (uint64, bool) {
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return costRead(args)
	}
	var k int
	if old == "" {
		k = utf8.RuneCountInString(string(s)) + 1
	} else {
		k = strings.Count(string(s), string(old))
	}
	if len(args) > 3 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && int64(k) > int64(n) {
			k = int(n)
		}
	}
	made := uint64(len(s)) + uint64(k)*uint64(len(repl))
	return 1 + tenth(uint64(max(1, len(s)))*uint64(max(1, len(old)))) + made, true
}

// costSplit: the scan, and a list of one text per part.
func costSplit(args []ref.Val) (uint64, bool) {
	s, ok1 := args[0].(types.String)
	sep, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return costRead(args)
	}
	var k int
	if sep == "" {
		k = utf8.RuneCountInString(string(s))
	} else {
		k = strings.Count(string(s), string(sep)) + 1
	}
	if len(args) > 2 {
		if n, ok := args[2].(types.Int); ok && n >= 0 && int64(k) > int64(n) {
			k = int(n)
		}
	}
	return 1 + tenth(uint64(len(s))+1) + uint64(k), true
}

// costJoin: what the result will hold, summed over the list (which was
// charged when it was made) without building it.
func costJoin(args []ref.Val) (uint64, bool) {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return costRead(args)
	}
	sep := uint64(0)
	if len(args) > 1 {
		sep = textSize(args[1])
	}
	n, ok := l.Size().(types.Int)
	if !ok || n <= 0 {
		return 1, true
	}
	made := uint64(n-1) * sep
	for i := types.Int(0); i < n; i++ {
		made += textSize(l.Get(i))
	}
	return 1 + tenth(uint64(n)) + made, true
}

// textSize is the length of a text or bytes value, 0 for others.
func textSize(v ref.Val) uint64 {
	switch v := v.(type) {
	case types.String:
		return uint64(len(v))
	case types.Bytes:
		return uint64(len(v))
	}
	return 0
}

// sizeOf is the number of elements of a list or map, 0 for others.
func sizeOf(v ref.Val) uint64 {
	var size ref.Val
	switch v := v.(type) {
	case traits.Lister:
		size = v.Size()
	case traits.Mapper:
		size = v.Size()
	default:
		return 0
	}
	if n, ok := size.(types.Int); ok && n > 0 {
		return uint64(n)
	}
	return 0
}

// tenth is a tenth of n, rounded up: CEL's charge for reading n bytes.
func tenth(n uint64) uint64 { return n/10 + min(1, n%10) }
