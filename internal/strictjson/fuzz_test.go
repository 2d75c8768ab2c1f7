package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/svc-gateway/svc/internal/strictjson"
)

// fuzzDoc is what the fuzzer's documents are read into: every kind of
// plan, and no omitempty, so that encoding it again shows every field.
type fuzzDoc struct {
	Name  *string             `json:"name"`
	Admin *bool               `json:"admin"`
	Mode  string              `json:"mode"`
	Kids  []fuzzDoc           `json:"kids"`
	Tags  map[string]*fuzzDoc `json:"tags"`
	Raw   json.RawMessage     `json:"raw"`
	Any   any                 `json:"any"`
	S     string              `json:"s"` // folds with ſ
	K     int                 `json:"k"` // folds with the Kelvin sign
}

// FuzzCheck holds Check to a slow reference built on encoding/json itself:
// it agrees with json.Valid on what is JSON; it finds a repeated key
// exactly when encoding/json's own tokens show one; and when it lets a
// document through, every key encoding/json bound to a field of fuzzDoc is
// that field's exact name (with RefuseUnknown every key is), which
// encoding the decoded value again shows.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`{"mode":"observe","admin":false,"ADMIN":true,"Mode":"optimize"}`,
		`{"name":"a","kids":[{"name":"b","NAME":"c"}],"tags":{"x":{"mode":"m"}}}`,
		`{"raw":{"a":1,"A":2},"any":[{"k":1}]}`,
		`{"ſ":"x"}`, `{"K":1}`, `{"adm\u0069n":true}`, "{\"\xff\":1,\"\xfe\":2}",
		`{"tags":{"a":{},"A":{}}}`, `[{"a":1},{"a":1,"a":2}]`, `{"kids":{"Name":1}}`,
		`{"mode":1}`, `{"other":1}`, `{"a":1}x`, `{"a":`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		free := strictjson.Check(data, nil, strictjson.AllowUnknown)
		for _, unknown := range []strictjson.Unknown{strictjson.RefuseUnknown, strictjson.AllowUnknown} {
			var doc fuzzDoc
			err := strictjson.Check(data, &doc, unknown)
			switch {
			case valid && errors.Is(err, strictjson.ErrSyntax):
				t.Fatalf("valid JSON %q refused as invalid", data)
			case !valid && err == nil:
				t.Fatalf("invalid JSON %q passed", data)
			case free != nil && err == nil:
				t.Fatalf("%q: a repeated key (%v) passed with a type", data, free)
			}
			if err != nil || json.Unmarshal(data, &doc) != nil {
				continue
			}
			again, merr := json.Marshal(doc)
			if merr != nil {
				t.Fatal(merr)
			}
			if err := covers(reflect.TypeFor[fuzzDoc](), generic(t, data), generic(t, again), unknown); err != nil {
				t.Fatalf("%q passed, but %v", data, err)
			}
		}
		if !valid {
			return
		}
		repeated, found, err := referenceRepeat(data)
		if err != nil {
			t.Fatal(err)
		}
		if (free != nil) != found {
			t.Fatalf("%q: Check says %v, the reference finds a repeated key: %v %q", data, free, found, repeated)
		}
	})
}

func generic(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// covers checks that the document d, read into type t, bound each of its
// keys exactly as written: each is a key of the re-encoded m, or (with
// AllowUnknown) spelled unlike every key of m in any letter case.
func covers(t reflect.Type, d, m any, unknown strictjson.Unknown) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if d == nil || t == reflect.TypeFor[json.RawMessage]() || t.Kind() == reflect.Interface {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		dObj, mObj := d.(map[string]any), m.(map[string]any)
		for k, dv := range dObj {
			mv, ok := mObj[k]
			if !ok {
				if unknown == strictjson.RefuseUnknown {
					return fmt.Errorf("key %q is no field", k)
				}
				for name := range mObj {
					if strings.EqualFold(k, name) {
						return fmt.Errorf("key %q was bound to field %q", k, name)
					}
				}
				continue
			}
			if err := covers(fieldType(t, k), dv, mv, unknown); err != nil {
				return fmt.Errorf("%s.%w", k, err)
			}
		}
	case reflect.Map:
		mObj := m.(map[string]any)
		for k, dv := range d.(map[string]any) {
			if err := covers(t.Elem(), dv, mObj[k], unknown); err != nil {
				return fmt.Errorf("%s.%w", k, err)
			}
		}
	case reflect.Slice:
		mList := m.([]any)
		for i, dv := range d.([]any) {
			if err := covers(t.Elem(), dv, mList[i], unknown); err != nil {
				return fmt.Errorf("[%d].%w", i, err)
			}
		}
	}
	return nil
}

func fieldType(t reflect.Type, name string) reflect.Type {
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
			return t.Field(i).Type
		}
	}
	panic("no field " + name)
}

// referenceRepeat walks encoding/json's tokens and returns the first key
// that repeats another of its object without regard to letter case.
func referenceRepeat(data []byte) (string, bool, error) {
	type frame struct {
		object, wantKey bool
		keys            []string
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, &frame{object: tok == json.Delim('{'), wantKey: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.object && top.wantKey {
				key := tok.(string)
				for _, k := range top.keys {
					if strings.EqualFold(k, key) {
						return key, true, nil
					}
				}
				top.keys = append(top.keys, key)
				top.wantKey = false
				continue
			}
		}
		// A value ended: its object waits for the next key.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
}
