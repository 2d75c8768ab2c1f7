package openai

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// answerAgrees fails t when readAnswer reads body otherwise than
// json.Unmarshal does; it reports whether readAnswerFast read it.
func answerAgrees(t *testing.T, body []byte) bool {
	t.Helper()
	var ref answerJSON
	err := json.Unmarshal(body, &ref)
	var typeErr *json.UnmarshalTypeError
	refOK := isObject(body) && (err == nil || errors.As(err, &typeErr))
	if !refOK {
		ref = answerJSON{}
	}
	got, ok := readAnswer(body)
	if ok != refOK || !reflect.DeepEqual(got, ref) {
		t.Fatalf("readAnswer(%q) = %#v, %v; json.Unmarshal reads %#v, %v", body, got, ok, ref, refOK)
	}
	fast, done := readAnswerFast(body)
	if done && (!refOK || err != nil || !reflect.DeepEqual(fast, ref)) {
		t.Fatalf("readAnswerFast(%q) = %#v; json.Unmarshal reads %#v, %v", body, fast, ref, err)
	}
	return done
}

// genAnswer writes random completion bodies: usage counts as numbers and
// other values, keys in other cases, repeated and escaped, errors, and
// choices to skip.
func genAnswer(r *rand.Rand) []byte {
	pick := func(options ...string) string { return options[r.IntN(len(options))] }
	odd := pick("", "", "x") != "" // one body in three has odd parts
	ws := func() string {
		if r.IntN(5) == 0 {
			return pick(" ", "\n", "\t", "\r\n ")
		}
		return ""
	}
	number := func() string {
		if odd && r.IntN(6) == 0 {
			return pick(`"12"`, `true`, `{}`, `[]`, `1e400`, `-1e-400`)
		}
		return pick(`0`, `12`, `7.5`, `-3`, `1e3`, `null`, `123456789012345678901234567890`)
	}
	key := func(k string) string {
		if odd && r.IntN(8) == 0 {
			switch r.IntN(3) {
			case 0:
				k = strings.ToUpper(k)
			case 1:
				k = strings.Replace(k, "e", `\u0065`, 1)
			default:
				k = strings.Replace(k, "s", "ſ", 1)
			}
		}
		return ws() + `"` + k + `"` + ws() + ":" + ws()
	}
	object := func(members []string) string {
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		kept := members[:0]
		for _, m := range members {
			if r.IntN(4) != 0 {
				kept = append(kept, m)
			}
		}
		if odd && len(kept) > 0 && r.IntN(6) == 0 {
			kept = append(kept, kept[0]) // repeated
		}
		return "{" + strings.Join(kept, ",") + ws() + "}"
	}
	var usage string
	switch {
	case odd && r.IntN(6) == 0:
		usage = pick(`null`, `[]`, `"u"`, `7`)
	default:
		usage = object([]string{
			key("prompt_tokens") + number(), key("completion_tokens") + number(), key("total_tokens") + number(),
			key("input_tokens") + number(), key("output_tokens") + number(), key("cache_creation_input_tokens") + number(),
			key("prompt_tokens_details") + pick(`null`, object([]string{key("cached_tokens") + number(), key("audio_tokens") + number()})),
			key("completion_tokens_details") + `{"reasoning_tokens":0}`,
		})
	}
	body := ws() + object([]string{
		key("id") + `"chatcmpl-1"`, key("object") + `"chat.completion"`,
		key("choices") + `[{"index":0,"message":{"role":"assistant","content":"a \"quoted\" [x] {y}"},"finish_reason":"stop"}]`,
		key("usage") + usage,
		key("error") + pick(`null`, `{"message":"m","type":"t"}`, `"bad"`),
		key("system_fingerprint") + pick(`null`, `"fp"`),
	}) + ws()
	if odd && r.IntN(8) == 0 {
		body = pick(`[]`, `null`, `"x"`, body[:len(body)/2], body+"}")
	}
	return []byte(body)
}

// readAnswer reads every generated body as json.Unmarshal does, and reads
// most itself.
func TestReadAnswerAgreesWithUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const bodies = 20_000
	fast := 0
	for range bodies {
		if answerAgrees(t, genAnswer(r)) {
			fast++
		}
	}
	t.Logf("read %d of %d bodies without json.Unmarshal", fast, bodies)
	if fast < bodies/3 {
		t.Fatalf("readAnswerFast read %d of %d bodies: the comparison compares little", fast, bodies)
	}
}

// FuzzReadAnswer: readAnswer reads any body as json.Unmarshal does.
func FuzzReadAnswer(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 20 {
		f.Add(genAnswer(r))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		answerAgrees(t, body)
	})
}

// BenchmarkReadAnswer reads a typical completion's usage.
func BenchmarkReadAnswer(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Billing: the customer reports a duplicate charge on this month's invoice.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},` +
		`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
		`"service_tier":"default","system_fingerprint":"fp_06737a9306"}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if a, ok := readAnswer(body); !ok || a.Usage == nil {
			b.Fatal("no usage")
		}
	}
}
