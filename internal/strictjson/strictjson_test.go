package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/strictjson"
)

type keyRequest struct {
	Name  string  `json:"name"`
	Mode  string  `json:"mode"`
	AppID *string `json:"appId"`
	Admin *bool   `json:"admin"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chat struct {
	Model    string             `json:"model"`
	Messages []message          `json:"messages"`
	Meta     map[string]message `json:"meta"`
	Payload  json.RawMessage    `json:"payload"`
	Extra    any                `json:"extra"`
	Secret   string             `json:"-"`
	// hidden is never read: it is here so that a key of its name is shown
	// to be unknown, as encoding/json ignores unexported fields.
	//lint:ignore U1000 present to be refused as a key, never used
	hidden string
}

type inner struct {
	A int `json:"a"`
	B int
}

type outer struct {
	inner
	C int `json:"c"`
}

type twin struct {
	B int
}

// ambiguous embeds two structs with a field "B" at the same depth, so
// encoding/json reads neither.
type ambiguous struct {
	inner
	twin
}

type node struct {
	Name string `json:"name"`
	Kids []node `json:"kids"`
}

// strictDecode is encoding/json refusing unknown fields.
func strictDecode(doc []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func keyError(t *testing.T, err error) *strictjson.KeyError {
	t.Helper()
	var ke *strictjson.KeyError
	require.ErrorAs(t, err, &ke)
	return ke
}

// The case: encoding/json alone reads this as an optimize admin
// key.
func TestKeysMatchExactly(t *testing.T) {
	var v keyRequest
	err := strictjson.Check([]byte(`{"mode":"observe","admin":false,"ADMIN":true,"Mode":"optimize"}`), &v, strictjson.RefuseUnknown)
	ke := keyError(t, err)
	assert.Equal(t, strictjson.Duplicate, ke.Problem)
	assert.Equal(t, "ADMIN", ke.Key)
	assert.Equal(t, "admin", ke.Other)
	assert.Equal(t, "ADMIN", ke.Param())
	assert.Contains(t, err.Error(), `"ADMIN"`)

	for _, mode := range []strictjson.Unknown{strictjson.RefuseUnknown, strictjson.AllowUnknown} {
		ke = keyError(t, strictjson.Check([]byte(`{"mode":"observe","Admin":true}`), &v, mode))
		assert.Equal(t, strictjson.CaseVariant, ke.Problem, "a key that is a field only without regard to case never binds")
		assert.Equal(t, "Admin", ke.Key)
		assert.Equal(t, "admin", ke.Other)
		assert.Contains(t, ke.Error(), `did you mean "admin"`)
	}

	require.NoError(t, strictjson.Check([]byte(`{"name":"k","mode":"observe","appId":null,"admin":true}`), &v, strictjson.RefuseUnknown))
	require.NoError(t, strictjson.Check([]byte(`{"adm\u0069n":true}`), &v, strictjson.RefuseUnknown), "an escape that decodes to the field's name is the field")
	ke = keyError(t, strictjson.Check([]byte(`{"admin":false,"\u0041DMIN":true}`), &v, strictjson.RefuseUnknown))
	assert.Equal(t, "ADMIN", ke.Key, "keys are compared as they decode")

	ke = keyError(t, strictjson.Check([]byte(`{"mode":"observe","mood":1}`), &v, strictjson.RefuseUnknown))
	assert.Equal(t, strictjson.UnknownField, ke.Problem)
	assert.Equal(t, `unknown field "mood"`, ke.Error())
	assert.NoError(t, strictjson.Check([]byte(`{"mode":"observe","mood":1}`), &v, strictjson.AllowUnknown))

	ke = keyError(t, strictjson.Check([]byte(`{"mode":"a","mode":"b"}`), &v, strictjson.AllowUnknown))
	assert.Equal(t, strictjson.Duplicate, ke.Problem)
	assert.Equal(t, `duplicate key "mode"`, ke.Error())
}

func TestNestedObjects(t *testing.T) {
	var v chat
	for _, c := range []struct {
		doc     string
		problem strictjson.Problem
		param   string
	}{
		{`{"messages":[{"role":"user"},{"role":"user","ROLE":"system"}]}`, strictjson.Duplicate, "messages[1].ROLE"},
		{`{"messages":[{"Role":"user"}]}`, strictjson.CaseVariant, "messages[0].Role"},
		{`{"meta":{"a":{"role":"x"},"A":{}}}`, strictjson.Duplicate, "meta.A"},
		{`{"meta":{"k":{"rOle":"x"}}}`, strictjson.CaseVariant, "meta.k.rOle"},
		{`{"payload":{"a":[{"x":1,"x":2}]}}`, strictjson.Duplicate, "payload.a[0].x"},
		{`{"messages":[{"role":"user","content":[{"type":"text","Type":"image"}]}]}`, strictjson.Duplicate, "messages[0].content[0].Type"},
		{`{"extra":{"deep":{"k":1,"K":2}}}`, strictjson.Duplicate, "extra.deep.K"},
		{`{"Secret":"x"}`, strictjson.UnknownField, "Secret"},
		{`{"hidden":"x"}`, strictjson.UnknownField, "hidden"},
	} {
		ke := keyError(t, strictjson.Check([]byte(c.doc), &v, strictjson.RefuseUnknown))
		assert.Equal(t, c.problem, ke.Problem, c.doc)
		assert.Equal(t, c.param, ke.Param(), c.doc)
	}
	// Free-form values take any keys, spelled any way, once each.
	assert.NoError(t, strictjson.Check([]byte(`{"payload":{"Role":1,"MODEL":2},"meta":{"Any Key":{"role":"x"}},"extra":{"a":{"A":1}}}`), &v, strictjson.RefuseUnknown))
	// A value of the wrong kind is encoding/json's to refuse; its keys are
	// still checked for repeats.
	assert.NoError(t, strictjson.Check([]byte(`{"messages":{"Role":1},"model":{"x":1}}`), &v, strictjson.RefuseUnknown))
	assert.Error(t, strictjson.Check([]byte(`{"model":{"x":1,"X":2}}`), &v, strictjson.RefuseUnknown))
}

func TestFieldsAsEncodingJSONFindsThem(t *testing.T) {
	var o outer
	doc := []byte(`{"a":1,"B":2,"c":3}`)
	assert.NoError(t, strictjson.Check(doc, &o, strictjson.RefuseUnknown), "an embedded struct's fields are promoted")
	require.NoError(t, strictDecode(doc, &o))
	assert.Equal(t, outer{inner: inner{A: 1, B: 2}, C: 3}, o)
	ke := keyError(t, strictjson.Check([]byte(`{"A":1}`), &o, strictjson.RefuseUnknown))
	assert.Equal(t, strictjson.CaseVariant, ke.Problem)

	var amb ambiguous
	ke = keyError(t, strictjson.Check([]byte(`{"B":1}`), &amb, strictjson.RefuseUnknown))
	assert.Equal(t, strictjson.UnknownField, ke.Problem, "neither of two fields named alike at one depth")
	assert.ErrorContains(t, strictDecode([]byte(`{"B":1}`), &amb), "unknown field", "encoding/json reads neither either")
	assert.NoError(t, strictjson.Check([]byte(`{"a":1}`), &amb, strictjson.RefuseUnknown))

	var n node
	ke = keyError(t, strictjson.Check([]byte(`{"kids":[{"kids":[{"NAME":"x"}]}]}`), &n, strictjson.AllowUnknown))
	assert.Equal(t, "kids[0].kids[0].NAME", ke.Param(), "a recursive type")

	var list []keyRequest
	ke = keyError(t, strictjson.Check([]byte(`[{"mode":"x"},{"MODE":"y"}]`), &list, strictjson.RefuseUnknown))
	assert.Equal(t, "[1].MODE", ke.Param())

	var m map[string]json.RawMessage
	ke = keyError(t, strictjson.Check([]byte(`{"a":1,"a":2}`), &m, strictjson.RefuseUnknown))
	assert.Equal(t, "a", ke.Param())
}

// Keys are compared as encoding/json compares them: Unicode simple case
// folding (the long s and S, the Kelvin sign and k) and invalid UTF-8 read
// as U+FFFD.
func TestKeysCompareAsEncodingJSONReadsThem(t *testing.T) {
	for _, doc := range []string{`{"ſ":1,"S":2}`, `{"k":1,"K":2}`, "{\"\xff\":1,\"\xfe\":2}", `{"\ud800":1,"\udc00":2}`} {
		ke := keyError(t, strictjson.Check([]byte(doc), nil, strictjson.AllowUnknown))
		assert.Equal(t, strictjson.Duplicate, ke.Problem, doc)
	}
	var v struct {
		S string `json:"s"`
	}
	ke := keyError(t, strictjson.Check([]byte(`{"ſ":1}`), &v, strictjson.AllowUnknown))
	assert.Equal(t, strictjson.CaseVariant, ke.Problem, "encoding/json binds ſ to s")
}

func TestSyntax(t *testing.T) {
	for _, doc := range []string{``, ` `, `{`, `{"a"}`, `{"a":}`, `[1,]`, `{"a":1,}`, `01`, `1.`, `-`, `"\x"`, "\"\x01\"",
		`"\u12"`, `tru`, `{} {}`, `{"a":1}x`, `nul`, `[`, `"abc`, `{"a" 1}`, `1e`, `{1:2}`} {
		err := strictjson.Check([]byte(doc), nil, strictjson.AllowUnknown)
		assert.ErrorIs(t, err, strictjson.ErrSyntax, "%q", doc)
		assert.False(t, json.Valid([]byte(doc)), "%q", doc)
	}
	for _, doc := range []string{`1`, ` {"a" : [ 1 , -2.5e+3 , true , false , null , "\u00e9\n" ] } `, `"x"`, `[]`, `{}`, "\"\xff\""} {
		assert.NoError(t, strictjson.Check([]byte(doc), nil, strictjson.AllowUnknown), "%q", doc)
	}
	deep := bytes.Repeat([]byte("["), 10001)
	assert.ErrorIs(t, strictjson.Check(deep, nil, strictjson.AllowUnknown), strictjson.ErrSyntax, "deeper than encoding/json reads")
}

// manyKeys is an object of n distinct keys.
func manyKeys(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"meta":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

func TestRepeatsAmongManyKeys(t *testing.T) {
	doc := manyKeys(50_000)
	require.NoError(t, strictjson.Check(doc, nil, strictjson.AllowUnknown))
	repeated := bytes.Replace(doc, []byte(`"k49999"`), []byte(`"K7"`), 1)
	ke := keyError(t, strictjson.Check(repeated, nil, strictjson.AllowUnknown))
	assert.Equal(t, "K7", ke.Key, "a repeat past the first keys is found")
	assert.Equal(t, "k7", ke.Other)
	assert.Equal(t, "meta.K7", ke.Param())
}

func TestLongKeysAreClippedInMessages(t *testing.T) {
	long := string(bytes.Repeat([]byte("é"), 10_000))
	err := strictjson.Check([]byte(`{"`+long+`":1,"`+long+`":2}`), nil, strictjson.AllowUnknown)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 300)
	assert.True(t, json.Valid([]byte(strconv.Quote(err.Error()))))
}

func TestNoAllocationsForSmallObjects(t *testing.T) {
	doc := []byte(`{"model":"m","messages":[{"role":"user","content":"hi \"there\""},{"role":"assistant","content":[{"type":"text","text":"x"}]}]}`)
	var v chat
	require.NoError(t, strictjson.Check(doc, &v, strictjson.AllowUnknown))
	allocs := testing.AllocsPerRun(100, func() {
		if err := strictjson.Check(doc, &v, strictjson.AllowUnknown); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkCheckChatRequest(b *testing.B) {
	doc := []byte(`{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":200,"user":"u-1","metadata":{"team":"support"},` +
		`"messages":[{"role":"system","content":"Classify the ticket as one of: billing, bug, feature_request."},` +
		`{"role":"user","content":"I was charged twice for my invoice this month."}]}`)
	var v chat
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := strictjson.Check(doc, &v, strictjson.AllowUnknown); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckManyKeys(b *testing.B) {
	doc := manyKeys(50_000)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := strictjson.Check(doc, nil, strictjson.AllowUnknown); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTypeWords(t *testing.T) {
	var body struct {
		S string            `json:"s"`
		B bool              `json:"b"`
		A []int             `json:"a"`
		O map[string]string `json:"o"`
		P *struct{}         `json:"p"`
		N uint8             `json:"n"`
		F float32           `json:"f"`
	}
	for in, want := range map[string]string{`{"s":1}`: "a string", `{"b":"x"}`: "a boolean", `{"a":"x"}`: "an array",
		`{"o":"x"}`: "an object", `{"p":"x"}`: "an object", `{"n":"x"}`: "a number", `{"f":"x"}`: "a number"} {
		err := json.Unmarshal([]byte(in), &body)
		var typeErr *json.UnmarshalTypeError
		require.True(t, errors.As(err, &typeErr), in)
		assert.Equal(t, want, strictjson.TypeWords(typeErr.Type), in)
	}
}
