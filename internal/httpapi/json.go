package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/svc-gateway/svc/internal/errs"
	"github.com/svc-gateway/svc/internal/strictjson"
)

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}

// writeRawJSON writes a body that is JSON already.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	// Two writes: body may be shared (a cached answer) and must not be
	// appended to.
	_, _ = w.Write(body)
	_, _ = w.Write([]byte{'\n'})
}

// decodeJSON reads r's body into dst, which should be a narrow struct made
// for the endpoint. It refuses a media type other than JSON, a body that
// did not arrive whole (see readBody), a key that is not one of dst's
// fields as spelled or that repeats another of its object in any letter
// case (see strictjson.Check), and anything after the one JSON value, each
// as a classified error.
func decodeJSON(r *http.Request, dst any) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	return decodeJSONBody(body, dst)
}

// decodeJSONBody is decodeJSON of a body already read, for an endpoint
// that looks at the body before it knows its type.
func decodeJSONBody(body []byte, dst any) error {
	checked := strictjson.Check(body, dst, strictjson.RefuseUnknown)
	var keyErr *strictjson.KeyError
	if errors.As(checked, &keyErr) {
		return errs.Invalidf(keyErr.Param(), "%s", keyErr.Error())
	}
	// Not JSON: encoding/json says where.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errs.Invalidf("", "request body must hold exactly one JSON value")
	}
	if checked != nil { // the two readers disagree: refuse rather than guess
		return errs.Invalidf("", "request body is not valid JSON")
	}
	return nil
}

// readJSONBody reads a body declared as JSON (or not declared), whole (see
// readBody); the endpoint's own parser reads it.
func readJSONBody(r *http.Request) ([]byte, error) {
	if err := checkJSONContentType(r); err != nil {
		return nil, err
	}
	return readBody(r)
}

// checkJSONContentType refuses a body declared as anything but JSON; a
// missing Content-Type is taken as JSON.
func checkJSONContentType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		// The plain type, which nearly every client sends, is taken as it
		// is; anything else is parsed.
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errs.E(errs.Unsupported, "unsupported_media_type", "Content-Type must be application/json")
		}
	}
	return nil
}

// jsonError explains a decoding failure to the person who sent the body.
func jsonError(err error) error {
	var (
		syntax    *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		fieldName string
	)
	switch {
	case errors.Is(err, io.EOF):
		return errs.Invalidf("", "request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errs.Invalidf("", "request body is truncated JSON")
	case errors.As(err, &syntax):
		return errs.Invalidf("", "request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return errs.Invalidf(typeErr.Field, "field %q must be %s", typeErr.Field, strictjson.TypeWords(typeErr.Type))
		}
		return errs.Invalidf("", "request body must be a JSON object")
	}
	if _, after, ok := strings.Cut(err.Error(), "json: unknown field "); ok {
		fieldName = strings.Trim(after, `"`)
		return errs.Invalidf(fieldName, "unknown field %q", fieldName)
	}
	return errs.Invalidf("", "request body is not valid: %s", strings.TrimPrefix(err.Error(), "json: "))
}
