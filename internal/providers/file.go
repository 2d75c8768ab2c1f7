package providers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"

	"github.com/svc-gateway/svc/internal/pricing"
	"github.com/svc-gateway/svc/internal/strictjson"
	"github.com/svc-gateway/svc/pkg/pluginapi"
)

// The first-party plugins: svc finds their binaries as
// SVC_PLUGIN_DIR/svc-provider-<name>, and may run them in its process.
var firstParty = []string{"openai", "anthropic", "mock"}

// FirstParty reports whether plugin names a first-party provider rather
// than a plugin binary's path.
func FirstParty(plugin string) bool { return slices.Contains(firstParty, plugin) }

// Defaults of the providers file.
const (
	DefaultMaxAttempts = 3
	DefaultBackoff     = 100 * time.Millisecond
	DefaultMaxBackoff  = 2 * time.Second
	DefaultFailures    = 5
	DefaultCooldown    = 30 * time.Second
	DefaultTimeout     = 60 * time.Second
)

// maxFileSize bounds a providers file.
const maxFileSize = 1 << 20

// Limits that keep a file's numbers to what an operator could mean.
const (
	maxAttempts = 20
	maxWeight   = 1_000_000
	maxDuration = 24 * time.Hour
)

// namePattern is a provider's name: it is recorded on runs and named in
// policies and routes.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// envName is an environment variable's name, as api_key_env names one.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedHeaders carry the key or the address: the plugin sets them.
var reservedHeaders = []string{"authorization", "x-api-key", "host"}

// credentialHeader says whether a header's name says it carries a
// credential, which a providers file never holds.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "api-key", "proxy-authorization", "cookie":
		return true
	}
	return strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret")
}

// File is a providers file, parsed and validated, its keys read: what Build
// opens into a Set.
type File struct {
	Source    string // the file's path
	Providers []Spec // in the file's order
	Routes    []Route
	Retries   Retries
}

// Spec is one provider instance before it is opened.
type Spec struct {
	Provider // Impl is nil; Fingerprint is set
	// Config is what the instance is told, its key included: never logged.
	Config pluginapi.ProviderConfig
}

// The file as written. Durations are strings, read once the entry is known
// so that an error can name it; pointers tell a field left out from a zero.
type fileDoc struct {
	Retries   *fileRetries   `json:"retries"`
	Breaker   *fileBreaker   `json:"breaker"`
	Providers []fileProvider `json:"providers"`
	Routes    []fileRoute    `json:"routes"`
}

type fileRetries struct {
	MaxAttempts *int   `json:"max_attempts"`
	Backoff     string `json:"backoff"`
	MaxBackoff  string `json:"max_backoff"`
}

type fileBreaker struct {
	Failures *int   `json:"failures"`
	Cooldown string `json:"cooldown"`
}

type fileProvider struct {
	Name    string `json:"name"`
	Plugin  string `json:"plugin"`
	Mode    string `json:"mode"`
	BaseURL string `json:"base_url"`
	// APIKey is read only to be refused with a message that says what to
	// write instead.
	APIKey     *string              `json:"api_key"`
	APIKeyEnv  string               `json:"api_key_env"`
	APIKeyFile string               `json:"api_key_file"`
	Models     []string             `json:"models"`
	Weight     *int                 `json:"weight"`
	Timeout    string               `json:"timeout"`
	Headers    map[string]string    `json:"headers"`
	Prices     map[string]filePrice `json:"prices"`
	Breaker    *fileBreaker         `json:"breaker"`
}

type filePrice = pricing.Price

type fileRoute struct {
	Model    string       `json:"model"`
	Strategy string       `json:"strategy"`
	Targets  []fileTarget `json:"targets"`
}

type fileTarget struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Weight   *int   `json:"weight"`
}

// rawDoc is fileDoc with its entries left as JSON, each decoded alone so
// that a wrong type is reported with its entry.
type rawDoc struct {
	Retries   json.RawMessage   `json:"retries"`
	Breaker   json.RawMessage   `json:"breaker"`
	Providers []json.RawMessage `json:"providers"`
	Routes    []json.RawMessage `json:"routes"`
}

// Env looks a variable of svc's environment up (os.LookupEnv).
type Env func(name string) (string, bool)

// ReadFile reads a file (conffile.Read): an api_key_file.
type ReadFile func(name string) ([]byte, error)

// Parse reads the providers file at source, whose contents are data:
// strict YAML or JSON (by the name's extension, else by the first
// character), every field validated, every key read through env and
// readFile. The error lists every problem found, each naming the file,
// the entry and the field.
func Parse(source string, data []byte, env Env, readFile ReadFile) (*File, error) {
	return ParseChecked(source, data, env, readFile, nil)
}

// ParseChecked is Parse that also asks checkPlugin (when not nil) about
// each entry's plugin and mode: a plugin binary that is missing is then
// listed with the file's other problems, rather than found only once they
// are fixed and the instance opened.
func ParseChecked(source string, data []byte, env Env, readFile ReadFile, checkPlugin func(plugin, mode string) error) (*File, error) {
	p := &parser{file: filepath.Base(source), dir: filepath.Dir(source), env: env, readFile: readFile, checkPlugin: checkPlugin}
	f := p.parse(data)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	f.Source = source
	return f, nil
}

// parser collects the problems of one file.
type parser struct {
	file        string // the file's name, which every message starts with
	dir         string // relative plugin paths are read from here
	env         Env
	readFile    ReadFile
	checkPlugin func(plugin, mode string) error // may be nil
	errs        []error
}

// fail records a problem of the entry (may be "") and field (may be "").
func (p *parser) fail(entry, field, format string, args ...any) {
	where := p.file + ":"
	if entry != "" {
		where += " " + entry + ":"
	}
	if field != "" {
		where += " " + field + ":"
	}
	p.errs = append(p.errs, errors.New(where+" "+fmt.Sprintf(format, args...)))
}

func (p *parser) parse(data []byte) *File {
	if len(data) > maxFileSize {
		p.fail("", "", "the file is larger than %d bytes", maxFileSize)
		return nil
	}
	doc, ok := p.toJSON(data)
	if !ok {
		return nil
	}
	if err := strictjson.Check(doc, &fileDoc{}, strictjson.RefuseUnknown); err != nil {
		var ke *strictjson.KeyError
		if errors.As(err, &ke) {
			p.keyErrors(doc, ke)
		} else {
			p.fail("", "", "not a providers file: %v", jsonSyntax(doc))
		}
		return nil
	}
	var raw rawDoc
	if err := json.Unmarshal(doc, &raw); err != nil {
		p.fail("", "", "not a providers file: %s", typeProblem(err, ""))
		return nil
	}
	f := &File{}
	f.Retries = p.retries(raw.Retries)
	defaultBreaker := BreakerConfig{Failures: DefaultFailures, Cooldown: DefaultCooldown}
	if len(raw.Breaker) > 0 && string(raw.Breaker) != "null" {
		var b fileBreaker
		if p.decode(raw.Breaker, &b, "breaker") {
			defaultBreaker = p.breaker("breaker", "", &b, defaultBreaker)
		}
	}
	if len(raw.Providers) == 0 {
		p.fail("", "providers", "at least one provider is required")
	}
	// Names are compared as written, valid entry or not, so that a name
	// used twice is told beside the entries' other problems.
	names := map[string]int{}
	for i, r := range raw.Providers {
		name := nameOf(r)
		first, dup := names[name]
		if !dup {
			names[name] = i
		}
		s, ok := p.provider(i, r, defaultBreaker)
		if dup && name != "" {
			p.fail(providerEntry(i, name), "name", "already used by providers[%d]", first)
			continue
		}
		if ok {
			f.Providers = append(f.Providers, s)
		}
	}
	byName := make(map[string]*Spec, len(f.Providers))
	for i := range f.Providers {
		byName[f.Providers[i].Name] = &f.Providers[i]
	}
	routed := map[string]int{}
	for i, r := range raw.Routes {
		model := modelOf(r)
		first, dup := routed[model]
		if !dup {
			routed[model] = i
		}
		route, ok := p.route(i, r, byName, names)
		if dup && model != "" {
			p.fail(routeEntry(i, model), "model", "already routed by routes[%d], which wins", first)
			continue
		}
		if ok {
			f.Routes = append(f.Routes, route)
		}
	}
	return f
}

// toJSON gives the document as JSON: a YAML one converted, once its
// duplicate keys and non-string keys are refused.
func (p *parser) toJSON(data []byte) ([]byte, bool) {
	ext := strings.ToLower(filepath.Ext(p.file))
	isJSON := ext == ".json" || (ext != ".yaml" && ext != ".yml" && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")))
	if isJSON {
		if !json.Valid(data) {
			p.fail("", "", "not a providers file: %v", jsonSyntax(data))
			return nil, false
		}
		return data, true
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			p.fail("", "", "the file is empty")
		} else {
			var te *yaml.TypeError
			if errors.As(err, &te) { // duplicate keys, one line each
				for _, e := range te.Errors {
					var line int
					if _, err := fmt.Sscanf(e, "line %d:", &line); err != nil {
						line = 0
					}
					p.fail(yamlEntry(data, line), "", "%s", e)
				}
			} else {
				p.fail("", "", "not a providers file: %s", strings.TrimPrefix(err.Error(), "yaml: "))
			}
		}
		return nil, false
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		p.fail("", "", "a providers file holds one YAML document")
		return nil, false
	}
	if v == nil {
		p.fail("", "", "the file is empty")
		return nil, false
	}
	v, err := jsonable(v, "")
	if err != nil {
		p.fail("", "", "%v", err)
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		p.fail("", "", "not a providers file: %v", err)
		return nil, false
	}
	return b, true
}

// entryAt matches a place in the document within an entry of providers
// or routes: "providers[1].prices.x".
var entryAt = regexp.MustCompile(`^(providers|routes)\[(\d+)\](?:\.(.*))?$`)

// jsonEntry splits a place in the document (a strictjson path) into the
// entry it falls in, named as every other error names it, and the field
// within it.
func jsonEntry(doc []byte, at string) (entry, field string) {
	m := entryAt.FindStringSubmatch(at)
	if m == nil {
		return at, ""
	}
	var d struct {
		Providers []json.RawMessage `json:"providers"`
		Routes    []json.RawMessage `json:"routes"`
	}
	_ = json.Unmarshal(doc, &d)
	var i int
	fmt.Sscan(m[2], &i)
	if m[1] == "providers" {
		name := ""
		if i < len(d.Providers) {
			name = nameOf(d.Providers[i])
		}
		return providerEntry(i, name), m[3]
	}
	model := ""
	if i < len(d.Routes) {
		model = modelOf(d.Routes[i])
	}
	return routeEntry(i, model), m[3]
}

// yamlEntry names the entry of providers or routes that holds a line of a
// YAML document; "" when none does.
func yamlEntry(data []byte, line int) string {
	var root yaml.Node
	if line <= 0 || yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return ""
	}
	top := root.Content[0].Content
	for k := 0; k+1 < len(top); k += 2 {
		key, seq := top[k], top[k+1]
		if (key.Value != "providers" && key.Value != "routes") || seq.Kind != yaml.SequenceNode {
			continue
		}
		end := math.MaxInt
		if k+2 < len(top) {
			end = top[k+2].Line
		}
		for i, item := range seq.Content {
			next := end
			if i+1 < len(seq.Content) {
				next = seq.Content[i+1].Line
			}
			if line < item.Line || line >= next {
				continue
			}
			label := ""
			for j := 0; item.Kind == yaml.MappingNode && j+1 < len(item.Content); j += 2 {
				if f := item.Content[j].Value; (f == "name" || f == "model") && item.Content[j+1].Kind == yaml.ScalarNode {
					label = item.Content[j+1].Value
					break
				}
			}
			if key.Value == "providers" {
				return providerEntry(i, label)
			}
			return routeEntry(i, label)
		}
	}
	return ""
}

// jsonable converts a decoded YAML value to one encoding/json writes:
// mappings with keys other than strings, and numbers JSON cannot hold, are
// refused with their place.
func jsonable(v any, at string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := jsonable(e, joinField(at, k))
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		for k := range v {
			if _, ok := k.(string); !ok {
				return nil, fmt.Errorf("%s: keys must be strings, not %v", orTop(at), k)
			}
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k.(string)] = e
		}
		return jsonable(m, at)
	case []any:
		for i, e := range v {
			c, err := jsonable(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%s: %v is not a number a providers file may hold", orTop(at), v)
		}
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	}
	return v, nil
}

func joinField(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func orTop(at string) string {
	if at == "" {
		return "the document"
	}
	return at
}

// jsonSyntax says where a document stops being JSON.
func jsonSyntax(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	if err == nil {
		return errors.New("invalid JSON")
	}
	return err
}

// keyErrors records the refused keys: first, the one the whole document
// was refused for, and the first of each other section and entry, so that
// one reading of the errors shows every entry to fix. They are listed in
// the document's order, a key of the top level (no section's) first.
func (p *parser) keyErrors(doc []byte, first *strictjson.KeyError) {
	var found []*strictjson.KeyError
	var raw rawDoc
	if json.Unmarshal(doc, &raw) == nil { // else a value of the wrong type: the first key only
		check := func(section string, value json.RawMessage, v any) {
			var ke *strictjson.KeyError
			if len(value) > 0 && errors.As(strictjson.Check(value, v, strictjson.RefuseUnknown), &ke) {
				ke.Path = strings.TrimSuffix(section+"."+ke.Path, ".")
				found = append(found, ke)
			}
		}
		check("retries", raw.Retries, &fileRetries{})
		check("breaker", raw.Breaker, &fileBreaker{})
		for i, r := range raw.Providers {
			check(fmt.Sprintf("providers[%d]", i), r, &fileProvider{})
		}
		for i, r := range raw.Routes {
			check(fmt.Sprintf("routes[%d]", i), r, &fileRoute{})
		}
	}
	if !slices.ContainsFunc(found, func(ke *strictjson.KeyError) bool { return ke.Path == first.Path && ke.Key == first.Key }) {
		found = append([]*strictjson.KeyError{first}, found...)
	}
	for _, ke := range found {
		entry, field := jsonEntry(doc, ke.Path)
		p.fail(entry, field, "%s", keyProblem(ke))
	}
}

// keyProblem words a refused key.
func keyProblem(ke *strictjson.KeyError) string {
	switch ke.Problem {
	case strictjson.Duplicate:
		return fmt.Sprintf("duplicate key %q", ke.Key)
	case strictjson.CaseVariant:
		return fmt.Sprintf("unknown field %q (did you mean %q?)", ke.Key, ke.Other)
	}
	return fmt.Sprintf("unknown field %q", ke.Key)
}

// typeProblem words a value of the wrong type, at the field
// encoding/json names unless at names one (an item of a list).
func typeProblem(err error, at string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if at != "" {
			field = at + strings.TrimPrefix(te.Field, strings.SplitN(te.Field, ".", 2)[0])
		}
		if te.Type.Kind() == reflect.String && durationFields[field[strings.LastIndexByte(field, '.')+1:]] {
			return fmt.Sprintf("%s: must be a duration written as a string (500ms, 30s), not %s", field, article(te.Value))
		}
		want, got := strictjson.TypeWords(te.Type), article(te.Value)
		if k := te.Type.Kind(); k >= reflect.Int && k <= reflect.Uint64 {
			want = "a whole number"
		}
		if n, ok := strings.CutPrefix(te.Value, "number "); ok {
			got = n // encoding/json says "number 2.5"
		}
		if field == "" {
			return fmt.Sprintf("must be %s, not %s", want, got)
		}
		return fmt.Sprintf("%s: must be %s, not %s", field, want, got)
	}
	return err.Error()
}

// durationFields are the fields read as Go durations.
var durationFields = map[string]bool{"timeout": true, "backoff": true, "max_backoff": true, "cooldown": true}

// article puts "a" or "an" before a JSON value's kind.
func article(kind string) string {
	if kind == "" {
		return "that value"
	}
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// decode reads one entry strictly, recording a wrong type against entry.
func (p *parser) decode(raw json.RawMessage, v any, entry string) bool {
	err := decodeInto(raw, v)
	if err == nil {
		return true
	}
	// encoding/json stops at the first value of the wrong type, and names
	// a list by its field alone: each field is read again on its own, a
	// list item by item, so that every problem is told where it is.
	before := len(p.errs)
	if fields, ok := objectFields(raw); ok {
		typ := reflect.TypeOf(v).Elem()
		for _, f := range fields {
			p.fieldProblems(entry, f.key, f.value, typ)
		}
	}
	if len(p.errs) == before {
		p.fail(entry, "", "%s", typeProblem(err, ""))
	}
	return false
}

func decodeInto(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// fieldProblems tells the type problems of one field of an entry read
// into a value of type t: of each of its items when it is a list.
func (p *parser) fieldProblems(entry, key string, value json.RawMessage, t reflect.Type) {
	alone := func(value json.RawMessage) error {
		doc, _ := json.Marshal(map[string]json.RawMessage{key: value})
		return decodeInto(doc, reflect.New(t).Interface())
	}
	err := alone(value)
	if err == nil {
		return
	}
	// A list field's items are told one by one; a list where the field
	// takes none (headers: [a, b]) is one problem.
	var items []json.RawMessage
	if isList(t, key) && json.Unmarshal(value, &items) == nil && len(items) > 0 {
		told := false
		for j, item := range items {
			if err := alone(json.RawMessage("[" + string(item) + "]")); err != nil {
				p.fail(entry, "", "%s", typeProblem(err, fmt.Sprintf("%s[%d]", key, j)))
				told = true
			}
		}
		if told {
			return
		}
	}
	p.fail(entry, "", "%s", typeProblem(err, ""))
}

// isList says whether t's field of JSON name key is a list.
func isList(t reflect.Type, key string) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == key {
			return f.Type.Kind() == reflect.Slice
		}
	}
	return false
}

// field is one key of a JSON object and its value.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields are the fields of a JSON object in their order; ok is
// false when raw is not an object.
func objectFields(raw json.RawMessage) (fields []field, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := t.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		fields = append(fields, field{key, value})
	}
	return fields, true
}

func providerEntry(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("providers[%d]", i)
	}
	return fmt.Sprintf("providers[%d] (name %q)", i, name)
}

func routeEntry(i int, model string) string {
	if model == "" {
		return fmt.Sprintf("routes[%d]", i)
	}
	return fmt.Sprintf("routes[%d] (model %q)", i, model)
}

// duration reads a Go duration between 0 and maxDuration; "" is def.
func (p *parser) duration(entry, field, v string, def time.Duration, positive bool) time.Duration {
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		p.fail(entry, field, "%q is not a duration (write it like 500ms, 30s or 2m)", clip(v))
	case d < 0 || (positive && d == 0):
		p.fail(entry, field, "must be more than 0, not %s", v)
	case d > maxDuration:
		p.fail(entry, field, "must be at most %s, not %s", maxDuration, v)
	default:
		return d
	}
	return def
}

// clip bounds a value quoted in a message.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return strings.ToValidUTF8(s[:80], "") + "…"
}

func (p *parser) retries(raw json.RawMessage) Retries {
	r := Retries{MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff}
	if len(raw) == 0 || string(raw) == "null" {
		return r
	}
	var fr fileRetries
	if !p.decode(raw, &fr, "retries") {
		return r
	}
	if fr.MaxAttempts != nil {
		if *fr.MaxAttempts < 1 || *fr.MaxAttempts > maxAttempts {
			p.fail("retries", "max_attempts", "must be between 1 and %d, not %d", maxAttempts, *fr.MaxAttempts)
		} else {
			r.MaxAttempts = *fr.MaxAttempts
		}
	}
	r.Backoff = p.duration("retries", "backoff", fr.Backoff, DefaultBackoff, false)
	r.MaxBackoff = p.duration("retries", "max_backoff", fr.MaxBackoff, max(DefaultMaxBackoff, r.Backoff), false)
	if r.MaxBackoff < r.Backoff {
		p.fail("retries", "max_backoff", "must be at least backoff (%s), not %s", r.Backoff, r.MaxBackoff)
	}
	return r
}

// breaker reads a breaker over def; field is "" for the top-level one.
func (p *parser) breaker(entry, field string, b *fileBreaker, def BreakerConfig) BreakerConfig {
	out := def
	prefix := ""
	if field != "" {
		prefix = field + "."
	}
	if b.Failures != nil {
		if *b.Failures < 0 || *b.Failures > 1000 {
			p.fail(entry, prefix+"failures", "must be between 0 (off) and 1000, not %d", *b.Failures)
		} else {
			out.Failures = *b.Failures
		}
	}
	out.Cooldown = p.duration(entry, prefix+"cooldown", b.Cooldown, def.Cooldown, true)
	return out
}

// provider reads and checks one provider entry.
func (p *parser) provider(i int, raw json.RawMessage, defaultBreaker BreakerConfig) (Spec, bool) {
	var fp fileProvider
	if !p.decode(raw, &fp, providerEntry(i, nameOf(raw))) {
		return Spec{}, false
	}
	before := len(p.errs)
	entry := providerEntry(i, fp.Name)
	s := Spec{Provider: Provider{Name: fp.Name, Plugin: fp.Plugin, Mode: fp.Mode, BaseURL: fp.BaseURL,
		Models: fp.Models, Weight: 1, Timeout: DefaultTimeout, Breaker: defaultBreaker}}
	switch {
	case fp.Name == "":
		p.fail(entry, "name", "is required")
	case !namePattern.MatchString(fp.Name):
		p.fail(entry, "name", "must be lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, at most 63 characters")
	}
	beforePlugin := len(p.errs) // the plugin is checked only when its name and mode are right
	switch {
	case fp.Plugin == "":
		p.fail(entry, "plugin", "is required: openai, anthropic, mock, or the path of a provider plugin binary")
	case FirstParty(fp.Plugin):
	case strings.ContainsRune(fp.Plugin, '/'):
		if !filepath.IsAbs(fp.Plugin) {
			s.Plugin = filepath.Join(p.dir, fp.Plugin)
		}
	default:
		p.fail(entry, "plugin", "must be openai, anthropic, mock, or the path of a provider plugin binary (containing a /), not %q", clip(fp.Plugin))
	}
	switch fp.Mode {
	case "":
		s.Mode = ModePlugin
	case ModePlugin:
	case ModeInProcess:
		if !FirstParty(fp.Plugin) {
			p.fail(entry, "mode", "in_process runs only the first-party providers (openai, anthropic, mock), not %q", clip(fp.Plugin))
		}
	default:
		p.fail(entry, "mode", "must be plugin or in_process, not %q", clip(fp.Mode))
	}
	if p.checkPlugin != nil && len(p.errs) == beforePlugin {
		if err := p.checkPlugin(s.Plugin, s.Mode); err != nil {
			p.fail(entry, "plugin", "%v", err)
		}
	}
	if fp.BaseURL != "" {
		u, err := url.Parse(fp.BaseURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			p.fail(entry, "base_url", "must be an absolute http(s) URL")
		case u.User != nil:
			p.fail(entry, "base_url", "must not hold credentials: name the key with api_key_env or api_key_file")
		case u.RawQuery != "" || u.Fragment != "":
			p.fail(entry, "base_url", "must not have a query or a fragment")
		default:
			s.Config.BaseURL = strings.TrimRight(fp.BaseURL, "/")
		}
	}
	s.Config.APIKey = p.key(entry, fp)
	for j, m := range fp.Models {
		if err := checkGlob(m); err != nil {
			p.fail(entry, fmt.Sprintf("models[%d]", j), "%v", err)
		}
	}
	if fp.Weight != nil {
		if *fp.Weight < 1 || *fp.Weight > maxWeight {
			p.fail(entry, "weight", "must be between 1 and %d, not %d", maxWeight, *fp.Weight)
		} else {
			s.Weight = *fp.Weight
		}
	}
	s.Timeout = p.duration(entry, "timeout", fp.Timeout, DefaultTimeout, true)
	if s.Timeout < time.Millisecond {
		p.fail(entry, "timeout", "must be at least 1ms, not %s", fp.Timeout)
		s.Timeout = DefaultTimeout
	}
	s.Config.Timeout = s.Timeout
	for _, h := range sortedKeys(fp.Headers) {
		v := fp.Headers[h]
		switch {
		case !httpguts.ValidHeaderFieldName(h):
			p.fail(entry, "headers", "%q is not a header name", clip(h))
		case slices.Contains(reservedHeaders, strings.ToLower(h)):
			p.fail(entry, "headers", "%s is set by the plugin from the instance's key and base_url, not here", h)
		case credentialHeader(h):
			// Never quoted: its value is a credential. The key fields keep
			// it out of the file, the status and the fingerprint.
			p.fail(entry, "headers", "%s carries a credential: name the key with api_key_env or api_key_file, which the plugin sends", h)
		case !httpguts.ValidHeaderFieldValue(v):
			p.fail(entry, "headers."+h, "must not hold a line break or another control character")
		}
	}
	if len(fp.Headers) > 0 {
		s.Config.Headers = fp.Headers
	}
	if len(fp.Prices) > 0 {
		prices := make(map[string]pricing.Price, len(fp.Prices))
		for _, m := range sortedKeys(fp.Prices) {
			pr := fp.Prices[m]
			switch {
			case strings.TrimSpace(m) == "":
				p.fail(entry, "prices", "a model name is required")
			case pr.Negative():
				p.fail(entry, "prices."+m, "prices must be 0 or more")
			}
			prices[m] = pr
		}
		s.Prices = pricing.New(prices)
	}
	if fp.Breaker != nil {
		s.Breaker = p.breaker(entry, "breaker", fp.Breaker, defaultBreaker)
	}
	if len(p.errs) > before {
		return Spec{}, false
	}
	s.Fingerprint = fingerprint(&s, fp.Prices)
	return s, true
}

// nameOf is an entry's name, when it has a string one, for the message
// about a value of a wrong type.
func nameOf(raw json.RawMessage) string {
	// By its exact key when there is one: decoding into a field would
	// take the last of "name" and "Name", the entry's refused duplicate.
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	v, ok := fields["name"]
	if !ok {
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if strings.EqualFold(k, "name") {
				v = fields[k]
				break
			}
		}
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// key reads the instance's key from where the entry says it is.
func (p *parser) key(entry string, fp fileProvider) string {
	if fp.APIKey != nil {
		p.fail(entry, "api_key", "a key is never written in the providers file: name the variable that holds it with api_key_env, or the file with api_key_file")
		return ""
	}
	switch {
	case fp.APIKeyEnv != "" && fp.APIKeyFile != "":
		p.fail(entry, "api_key_env", "set api_key_env or api_key_file, not both")
	case !envName.MatchString(fp.APIKeyEnv) && fp.APIKeyEnv != "":
		// Never quoted: an operator may have pasted the key itself here.
		p.fail(entry, "api_key_env", "must be the name of a variable (letters, digits and _, not starting with a digit), not the key itself")
	case fp.APIKeyEnv != "":
		v, ok := p.env(fp.APIKeyEnv)
		v = strings.TrimSpace(v)
		switch {
		case !ok:
			p.fail(entry, "api_key_env", "%s is not set in svc's environment", clip(fp.APIKeyEnv))
		case v == "":
			p.fail(entry, "api_key_env", "%s is empty", clip(fp.APIKeyEnv))
		default:
			return v
		}
	case fp.APIKeyFile != "":
		keyFile := fp.APIKeyFile
		if !filepath.IsAbs(keyFile) {
			keyFile = filepath.Join(p.dir, keyFile) // beside the providers file, as a plugin's path
		}
		b, err := p.readFile(keyFile)
		v := strings.TrimSpace(string(b))
		switch {
		case err != nil:
			p.fail(entry, "api_key_file", "cannot be read: %v", pathless(err))
		case v == "":
			p.fail(entry, "api_key_file", "%s is empty", clip(fp.APIKeyFile))
		default:
			return v
		}
	}
	return ""
}

// pathless is a file error without the path, which the message names
// already.
func pathless(err error) error {
	var pe interface{ Unwrap() error }
	if errors.As(err, &pe) && pe.Unwrap() != nil {
		return pe.Unwrap()
	}
	return err
}

// checkGlob refuses an empty name and a malformed glob.
func checkGlob(g string) error {
	if strings.TrimSpace(g) == "" {
		return errors.New("a model name or glob is required")
	}
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("%q is not a valid glob", clip(g))
	}
	return nil
}

// isGlob reports whether a model name has glob characters.
func isGlob(m string) bool { return strings.ContainsAny(m, `*?[\`) }

// Serves reports whether a provider's models match the model named
// upstream: every model when it lists none.
func (p *Provider) Serves(model string) bool {
	if len(p.Models) == 0 {
		return true
	}
	for _, g := range p.Models {
		if g == model {
			return true
		}
		if ok, _ := path.Match(g, model); ok {
			return true
		}
	}
	return false
}

// route reads and checks one route entry against the valid providers
// byName; a target naming a provider whose entry was refused is not
// refused again.
func (p *parser) route(i int, raw json.RawMessage, byName map[string]*Spec, declared map[string]int) (Route, bool) {
	var fr fileRoute
	if !p.decode(raw, &fr, routeEntry(i, modelOf(raw))) {
		return Route{}, false
	}
	before := len(p.errs)
	entry := routeEntry(i, fr.Model)
	r := Route{Model: fr.Model, Strategy: fr.Strategy}
	if err := checkGlob(fr.Model); err != nil {
		p.fail(entry, "model", "%v", err)
	}
	switch fr.Strategy {
	case "":
		r.Strategy = Ordered
	case Ordered, Weighted:
	default:
		p.fail(entry, "strategy", "must be ordered or weighted, not %q", clip(fr.Strategy))
	}
	if len(fr.Targets) == 0 {
		p.fail(entry, "targets", "at least one target is required")
	}
	for j, t := range fr.Targets {
		field := fmt.Sprintf("targets[%d]", j)
		target := Target{Provider: t.Provider, Model: t.Model}
		spec, ok := byName[t.Provider]
		_, written := declared[t.Provider] // by an entry with problems of its own
		switch {
		case t.Provider == "":
			p.fail(entry, field+".provider", "is required")
		case !ok && !written:
			p.fail(entry, field+".provider", "no provider is named %q", clip(t.Provider))
		}
		if t.Model != "" {
			if err := checkGlob(t.Model); err != nil || isGlob(t.Model) {
				p.fail(entry, field+".model", "must be a model name, not a glob")
			}
		}
		upstream := t.Model
		if upstream == "" {
			upstream = fr.Model
		}
		for k, prev := range fr.Targets[:j] {
			if prev.Provider == t.Provider && (prev.Model == t.Model || prev.Model == "" && t.Model == fr.Model ||
				t.Model == "" && prev.Model == fr.Model) {
				p.fail(entry, field, "provider %q with model %q is already targets[%d]: one provider may be listed twice only with two models", t.Provider, clip(upstream), k)
				break
			}
		}
		if ok && !isGlob(upstream) && !spec.Serves(upstream) {
			p.fail(entry, field+".model", "provider %q does not serve %q (its models: %s)", t.Provider, clip(upstream),
				strings.Join(spec.Models, ", "))
		}
		if t.Weight != nil {
			switch {
			case r.Strategy != Weighted:
				p.fail(entry, field+".weight", "is for weighted routes; this one is %s", r.Strategy)
			case *t.Weight < 1 || *t.Weight > maxWeight:
				p.fail(entry, field+".weight", "must be between 1 and %d, not %d", maxWeight, *t.Weight)
			default:
				target.Weight = *t.Weight
			}
		}
		if target.Weight == 0 && r.Strategy == Weighted && ok {
			target.Weight = spec.Weight
		}
		r.Targets = append(r.Targets, target)
	}
	return r, len(p.errs) == before
}

// modelOf is a route's model, when it has a string one.
func modelOf(raw json.RawMessage) string {
	var m struct {
		Model any `json:"model"`
	}
	_ = json.Unmarshal(raw, &m)
	s, _ := m.Model.(string)
	return s
}

// fingerprint digests everything an instance is configured with, its key
// as a hash: a reload keeps the instance when it is the same.
func fingerprint(s *Spec, prices map[string]filePrice) string {
	keyHash := ""
	if s.Config.APIKey != "" {
		h := sha256.Sum256([]byte(s.Config.APIKey))
		keyHash = hex.EncodeToString(h[:])
	}
	b, _ := json.Marshal(struct { // every field marshals
		Name, Plugin, Mode, BaseURL string
		Models                      []string
		Weight                      int
		Timeout                     time.Duration
		Headers                     map[string]string // encoding/json sorts map keys
		Prices                      map[string]filePrice
		Breaker                     BreakerConfig
		KeyHash                     string
	}{s.Name, s.Plugin, s.Mode, s.Config.BaseURL, s.Models, s.Weight, s.Timeout, s.Config.Headers, prices, s.Breaker, keyHash})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sortedKeys are a map's keys in order, so that messages come in the same
// order every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
