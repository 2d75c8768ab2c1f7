package httpapi

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// A body of a declared length is read into one buffer of its size, not
// grown from 512 bytes as it arrives.
func TestReadBodySizedFromContentLength(t *testing.T) {
	body := strings.Repeat("x", 30<<10)
	src := strings.NewReader(body)
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.Body, r.ContentLength = io.NopCloser(src), int64(len(body))
	allocs := testing.AllocsPerRun(20, func() {
		src.Reset(body)
		got, err := readBody(r)
		if err != nil || len(got) != len(body) {
			t.Fatalf("readBody: %d bytes, %v", len(got), err)
		}
	})
	if allocs != 1 { // io.ReadAll grows its buffer several times
		t.Fatalf("reading a 30 KiB body took %v allocations", allocs)
	}
}

// A declared length is taken at its word only up to sizedMax: a client
// that declares a large body and sends a little does not make the server
// hold a buffer of the declared size.
func TestReadBodyDoesNotTrustALargeDeclaredLength(t *testing.T) {
	got, err := readAll(strings.NewReader("hi"), 8<<20)
	if err != nil || string(got) != "hi" {
		t.Fatalf("readAll: %q, %v", got, err)
	}
	if cap(got) > sizedMax+1 {
		t.Fatalf("a body of 2 bytes declared as 8 MiB got a buffer of %d bytes", cap(got))
	}
}

// readAll reads what io.ReadAll reads, whatever the declared length says
// and however the reader splits its data, errors too.
func TestReadAllIsReadAll(t *testing.T) {
	for _, size := range []int{0, 1, 511, 512, 513, 4096, sizedMax, sizedMax + 1, 3*sizedMax + 7} {
		data := bytes.Repeat([]byte("0123456789"), size/10+1)[:size]
		for _, declared := range []int64{-1, 0, 1, int64(size) - 1, int64(size), int64(size) + 1, 1 << 40} {
			for name, rd := range map[string]func() io.Reader{
				"whole":   func() io.Reader { return bytes.NewReader(data) },
				"by byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
				"error":   func() io.Reader { return io.MultiReader(bytes.NewReader(data), iotest.ErrReader(io.ErrUnexpectedEOF)) },
			} {
				want, werr := io.ReadAll(rd())
				got, err := readAll(rd(), declared)
				if !bytes.Equal(got, want) || err != werr {
					t.Fatalf("%d bytes declared %d, %s: read %d bytes, %v; io.ReadAll %d, %v", size, declared, name, len(got), err, len(want), werr)
				}
			}
		}
	}
}

// The usual Content-Type of a JSON body is accepted without parsing it;
// others still are, with their parameters.
func TestJSONContentTypeTakesThePlainTypeAsItIs(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	for ct, ok := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"application/vnd.api+json": true, "text/plain": false, "application/json; charset": false, "": true,
	} {
		r.Header.Set("Content-Type", ct)
		if err := checkJSONContentType(r); (err == nil) != ok {
			t.Errorf("Content-Type %q: error %v", ct, err)
		}
	}
	r.Header.Set("Content-Type", "application/json")
	if allocs := testing.AllocsPerRun(20, func() { _ = checkJSONContentType(r) }); allocs != 0 {
		t.Errorf("application/json: %v allocations, want 0", allocs)
	}
}
