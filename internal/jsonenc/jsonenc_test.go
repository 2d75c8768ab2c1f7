package jsonenc

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/svc-gateway/svc/internal/jsonenc/jsonenctest"
)

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStringIsEncodingJSONs(t *testing.T) {
	for _, s := range jsonenctest.Strings(rand.New(rand.NewPCG(1, 2)), 5000) {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Fatalf("String(%q) = %s, json.Marshal: %s", s, got, want)
		}
	}
}

func TestFloatIsEncodingJSONs(t *testing.T) {
	for _, f := range jsonenctest.Floats(rand.New(rand.NewPCG(3, 4)), 20000) {
		got, ok := Float(nil, f)
		if want := marshal(t, f); !ok || string(got) != want {
			t.Fatalf("Float(%v) = %s %v, json.Marshal: %s", f, got, ok, want)
		}
	}
}

func TestFloatRefusesWhatEncodingJSONRefuses(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := json.Marshal(f); err == nil {
			t.Fatalf("json.Marshal(%v) encodes", f)
		}
		if b, ok := Float([]byte("x"), f); ok || string(b) != "x" {
			t.Fatalf("Float(%v) = %q %v", f, b, ok)
		}
	}
}

func TestTimeIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	times := []time.Time{{}, time.Unix(0, 0).UTC(), time.Date(2026, 11, 26, 19, 0, 0, 123456789, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -23*3600-59*60)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 90))}
	for range 5000 {
		at := time.Unix(rng.Int64N(400_000_000_000)-200_000_000_000, rng.Int64N(1e9))
		zone := time.FixedZone("", (rng.IntN(60*48)-60*24)*60)
		if rng.IntN(2) == 0 {
			zone = time.UTC
		}
		times = append(times, at.In(zone))
	}
	for _, at := range times {
		timeMatches(t, at)
	}
}

// timeMatches checks Time against json.Marshal for at, a refusal too.
func timeMatches(t *testing.T, at time.Time) {
	t.Helper()
	want, err := json.Marshal(at)
	got, ok := Time([]byte("x"), at)
	switch {
	case err != nil && (ok || string(got) != "x"):
		t.Fatalf("Time(%v) = %s, json.Marshal refuses it: %v", at, got, err)
	case err == nil && (!ok || string(got) != "x"+string(want)):
		t.Fatalf("Time(%v) = %s %v, json.Marshal: %s", at, got, ok, want)
	}
}

func TestIntAndBool(t *testing.T) {
	for _, n := range []int64{0, -1, 1, math.MaxInt64, math.MinInt64, 200} {
		if got := string(Int(nil, n)); got != marshal(t, n) {
			t.Fatalf("Int(%d) = %s", n, got)
		}
	}
	if string(Bool(nil, true)) != "true" || string(Bool(nil, false)) != "false" {
		t.Fatal("Bool")
	}
}

func FuzzString(f *testing.F) {
	f.Add("<a href=\"x\">&\u2028\xff</a>")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Fatalf("String(%q) = %s, json.Marshal: %s", s, got, want)
		}
	})
}

func FuzzFloat(f *testing.F) {
	f.Add(0.0000102)
	f.Fuzz(func(t *testing.T, v float64) {
		got, ok := Float(nil, v)
		want, err := json.Marshal(v)
		if ok != (err == nil) || ok && string(got) != string(want) {
			t.Fatalf("Float(%v) = %s %v, json.Marshal: %s %v", v, got, ok, want, err)
		}
	})
}

func FuzzTime(f *testing.F) {
	f.Add(int64(1_700_000_000), int64(123456789), 0)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		timeMatches(t, time.Unix(sec, nsec).In(time.FixedZone("", offset%(100*3600))))
	})
}
