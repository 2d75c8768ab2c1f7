package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/accounts"
	"github.com/svc-gateway/svc/internal/browse"
	"github.com/svc-gateway/svc/internal/governance"
	"github.com/svc-gateway/svc/internal/jobs"
	"github.com/svc-gateway/svc/internal/learning"
	"github.com/svc-gateway/svc/internal/ledger"
	"github.com/svc-gateway/svc/internal/providers"
	"github.com/svc-gateway/svc/internal/responses"
	"github.com/svc-gateway/svc/internal/spend"
	"github.com/svc-gateway/svc/internal/workflows"
)

// answerTypes are the Go types each route answers and reads, by route.
func answerTypes() (answers, requests map[string]any) {
	answers = map[string]any{
		"GET /health":                   healthResponse{},
		"GET /v1/models":                modelList{},
		"POST /api/v1/keys":             keyView{},
		"GET /api/v1/keys":              keyList{},
		"POST /api/v1/keys/{id}/revoke": keyAnswer{},
		"GET /api/v1/settings":          settingsAnswer{},
		"PUT /api/v1/settings":          settingsAnswer{},
		"POST /api/v1/auth/login":       userResponse{},
		"POST /api/v1/auth/logout":      okResponse{},
		"GET /api/v1/auth/me": struct {
			User           accounts.User `json:"user"`
			ActiveTenantID string        `json:"activeTenantId"`
			Role           string        `json:"role"`
		}{},
		"POST /api/v1/auth/password-reset":         okResponse{},
		"POST /api/v1/auth/password-reset/{token}": okResponse{},
		"POST /api/v1/auth/signup":                 signedIn{},
		"GET /api/v1/auth/verify/{token}": struct {
			OK    bool   `json:"ok"`
			Email string `json:"email"`
		}{},
		"GET /api/v1/orgs": struct {
			Orgs []accounts.Org `json:"orgs"`
		}{},
		"POST /api/v1/orgs":                           orgResponse{},
		"POST /api/v1/orgs/switch":                    orgResponse{},
		"GET /api/v1/orgs/active":                     accounts.ActiveOrg{},
		"PATCH /api/v1/orgs/active":                   accounts.ActiveOrg{},
		"DELETE /api/v1/orgs/active":                  okResponse{},
		"PATCH /api/v1/orgs/active/members/{userId}":  memberResponse{},
		"DELETE /api/v1/orgs/active/members/{userId}": okResponse{},
		"POST /api/v1/orgs/active/leave":              leftOrg{},
		"POST /api/v1/auth/verify/resend": struct {
			Sent bool `json:"sent"`
		}{},
		"POST /api/v1/orgs/active/invites": struct {
			Invite    accounts.Invite `json:"invite"`
			AcceptURL string          `json:"acceptUrl"`
		}{},
		"GET /api/v1/orgs/active/invites": struct {
			Invites []accounts.Invite `json:"invites"`
		}{},
		"POST /api/v1/orgs/active/invites/{id}/revoke": struct {
			Invite accounts.Invite `json:"invite"`
		}{},
		"GET /api/v1/invites/{token}":            accounts.InviteInfo{},
		"POST /api/v1/invites/{token}/accept":    signedIn{},
		"GET /api/v1/audit":                      auditEventList{},
		"GET /api/v1/runs":                       runList{},
		"GET /api/v1/runs/{id}":                  ledger.Detail{},
		"GET /api/v1/runs/{id}/integrity":        ledger.Integrity{},
		"GET /api/v1/runs/{id}/replay-bundle":    ledger.Bundle{},
		"POST /api/v1/runs/{id}/feedback":        feedbackAnswer{},
		"POST /api/v1/trace":                     traceAnswer{},
		"GET /api/v1/agents":                     agentList{},
		"GET /api/v1/ledger/checkpoints":         checkpointList{},
		"GET /api/v1/ledger/key":                 ledger.PublicKeyInfo{},
		"GET /api/v1/savings":                    ledger.SavingsReport{},
		"GET /api/v1/spend":                      spend.Report{},
		"GET /api/v1/budgets":                    budgetList{},
		"PUT /api/v1/budgets":                    budgetList{},
		"GET /api/v1/cache/stats":                cacheStatsAnswer{},
		"POST /api/v1/cache/invalidate":          cacheInvalidated{},
		"POST /api/v1/tool-cache/check":          toolCacheCheckAnswer{},
		"POST /api/v1/tool-cache/store":          toolCacheStored{},
		"GET /api/v1/policies":                   governance.Policies{},
		"GET /api/v1/policies/{id}/verdicts":     verdictList{},
		"POST /api/v1/policies/reload":           reloadAnswer{},
		"GET /api/v1/providers":                  providers.Status{},
		"POST /api/v1/providers/reload":          providers.Status{},
		"GET /api/v1/approvals":                  approvalList{},
		"POST /api/v1/approvals/{id}/approve":    approvalAnswer{},
		"POST /api/v1/approvals/{id}/reject":     approvalAnswer{},
		"GET /api/v1/jobs":                       jobs.Listing{},
		"GET /api/v1/patterns":                   patternList{},
		"GET /api/v1/patterns/{id}":              learning.PatternDetail{},
		"POST /api/v1/patterns/{id}/synthesize":  learning.SynthesisResult{},
		"POST /api/v1/patterns/{id}/ignore":      patternAnswer{},
		"GET /api/v1/artifacts":                  artifactList{},
		"GET /api/v1/artifacts/{id}":             learning.ArtifactDetail{},
		"POST /api/v1/artifacts/{id}/promote":    artifactAnswer{},
		"POST /api/v1/artifacts/{id}/rollback":   artifactAnswer{},
		"POST /api/v1/artifacts/{id}/quarantine": artifactAnswer{},
		"POST /api/v1/artifacts/{id}/replay":     learning.ReplayResult{},
		"GET /api/v1/learning/report":            learning.Reports{},
		"POST /api/v1/learning/tick":             learning.Report{},
		"POST /api/v1/web/fetch":                 browse.FetchResult{},
		"GET /api/v1/web/snapshots": struct {
			Snapshots []browse.Snapshot `json:"snapshots"`
			Total     int               `json:"total"`
		}{},
		"GET /api/v1/web/snapshots/{id}": struct {
			Snapshot browse.Snapshot `json:"snapshot"`
		}{},
		"POST /api/v1/web/sessions": browse.Opened{},
		"GET /api/v1/web/sessions": struct {
			Sessions []browse.SessionInfo `json:"sessions"`
		}{},
		"POST /api/v1/web/sessions/{id}/act":          browse.Acted{},
		"DELETE /api/v1/web/sessions/{id}":            okResponse{},
		"GET /api/v1/workflows":                       workflowList{},
		"GET /api/v1/orgs/active/onboarding":          workflows.Onboarding{},
		"POST /api/v1/orgs/active/onboarding/dismiss": workflows.Onboarding{},
		"POST /api/v1/orgs/active/seed-demo":          seedDemoAnswer{},
		"DELETE /v1/responses/{id}":                   responseDeleted{},
		"GET /v1/responses/{id}/input_items":          responses.Page[responses.InputItem]{},
	}
	requests = map[string]any{
		"POST /api/v1/keys":    createKeyRequest{},
		"PUT /api/v1/settings": putSettingRequest{},
		"POST /api/v1/auth/login": struct {
			Email    string `json:"email"`
			Password string `json:"password"`
		}{},
		"POST /api/v1/auth/password-reset": struct {
			Email string `json:"email"`
		}{},
		"POST /api/v1/auth/password-reset/{token}": struct {
			Password string `json:"password"`
		}{},
		"POST /api/v1/auth/signup": struct {
			Email    string `json:"email"`
			Name     string `json:"name"`
			Password string `json:"password"`
		}{},
		"POST /api/v1/orgs": struct {
			Name string `json:"name"`
		}{},
		"POST /api/v1/orgs/switch": struct {
			TenantID string `json:"tenantId"`
		}{},
		"PATCH /api/v1/orgs/active": struct {
			Name string `json:"name"`
		}{},
		"DELETE /api/v1/orgs/active": struct {
			Confirm string `json:"confirm"`
		}{},
		"PATCH /api/v1/orgs/active/members/{userId}": struct {
			Role string `json:"role"`
		}{},
		"POST /api/v1/orgs/active/invites": struct {
			Email string `json:"email"`
			Role  string `json:"role"`
		}{},
		"POST /api/v1/invites/{token}/accept": struct {
			Name     string `json:"name"`
			Password string `json:"password"`
		}{},
		"POST /api/v1/runs/{id}/feedback":     feedbackRequest{},
		"POST /api/v1/trace":                  traceRequest{},
		"POST /api/v1/cache/invalidate":       invalidateRequest{},
		"POST /api/v1/tool-cache/check":       toolCacheRequest{},
		"POST /api/v1/tool-cache/store":       toolCacheRequest{},
		"POST /api/v1/approvals/{id}/approve": decisionRequest{},
		"POST /api/v1/approvals/{id}/reject":  decisionRequest{},
		"POST /api/v1/artifacts/{id}/promote": promoteRequest{},
		"POST /api/v1/artifacts/{id}/replay":  replayRequest{},
		"POST /api/v1/web/fetch": struct {
			URL         string `json:"url"`
			BypassCache bool   `json:"bypassCache"`
		}{},
		"POST /api/v1/web/sessions": struct {
			URL string `json:"url"`
		}{},
		"POST /api/v1/web/sessions/{id}/act": browse.Action{},
	}
	return answers, requests
}

// Every JSON field of a route's answer and request types is described in
// openapi.json, at every depth, so that a field added to a type and not to
// the document fails here.
func TestOpenAPISchemasCoverTheAnswerTypes(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(openAPIDocument, &doc))
	answers, requests := answerTypes()
	paths := doc["paths"].(map[string]any)
	op := func(route string) map[string]any {
		method, path, _ := strings.Cut(route, " ")
		o, _ := paths[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		require.NotNil(t, o, "openapi.json does not describe %s", route)
		return o
	}
	content := func(v any) any {
		c, _ := v.(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
		return c["schema"]
	}
	c := schemaCheck{t: t, schemas: doc["components"].(map[string]any)["schemas"].(map[string]any), seen: map[string]bool{}}
	for route, v := range answers {
		responses := op(route)["responses"].(map[string]any)
		ok := responses["200"]
		for _, code := range []string{"201", "202"} {
			if ok == nil {
				ok = responses[code]
			}
		}
		require.NotNil(t, ok, "%s has no success answer in openapi.json", route)
		c.check(content(ok), reflect.TypeOf(v), route+" answer")
	}
	for route, v := range requests {
		body, _ := op(route)["requestBody"].(map[string]any)
		require.NotNil(t, body, "%s has no request body in openapi.json", route)
		c.check(content(body), reflect.TypeOf(v), route+" request")
	}
}

type schemaCheck struct {
	t       *testing.T
	schemas map[string]any
	seen    map[string]bool
}

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

func (c schemaCheck) check(schema any, typ reflect.Type, at string) {
	s, _ := schema.(map[string]any)
	if s == nil {
		c.t.Errorf("%s: no schema", at)
		return
	}
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		key := name + " " + typ.String()
		if c.seen[key] {
			return
		}
		c.seen[key] = true
		c.check(c.schemas[name], typ, at+" ("+name+")")
		return
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if m, _ := a.(map[string]any); m["type"] != "null" {
				c.check(a, typ, at)
			}
		}
		return
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == reflect.TypeOf(time.Time{}) || typ == reflect.TypeOf(json.RawMessage{}) || typ.Implements(jsonMarshaler) {
		return
	}
	switch typ.Kind() {
	case reflect.Slice, reflect.Array:
		if typ.Elem().Kind() != reflect.Uint8 {
			if items, ok := s["items"]; ok {
				c.check(items, typ.Elem(), at+"[]")
			} else {
				c.t.Errorf("%s: a list, described without items", at)
			}
		}
	case reflect.Map:
		if extra, ok := s["additionalProperties"].(map[string]any); ok && len(extra) > 0 {
			c.check(extra, typ.Elem(), at+"{}")
		}
	case reflect.Struct:
		props, _ := s["properties"].(map[string]any)
		for name, ft := range jsonFields(typ) {
			p, ok := props[name]
			if !ok {
				c.t.Errorf("%s: openapi.json does not describe the field %q", at, name)
				continue
			}
			c.check(p, ft, at+"."+name)
		}
	}
}

// jsonFields are the fields encoding/json writes for a struct type, by name.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for n, t := range jsonFields(ft) {
				out[n] = t
			}
		case f.IsExported():
			if name == "" {
				name = f.Name
			}
			out[name] = f.Type
		}
	}
	return out
}
