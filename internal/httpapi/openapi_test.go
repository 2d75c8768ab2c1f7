package httpapi

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/internal/metrics"
)

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(openAPIDocument, &doc), "openapi.json is not JSON")
	return doc
}

// registeredRoutes reads the method patterns routes.go registers, from its
// source, so that a route added there and not to the document fails the test.
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "routes.go", nil, 0)
	require.NoError(t, err)
	var patterns []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Handle" {
			return true
		}
		if mux, ok := sel.X.(*ast.SelectorExpr); !ok || mux.Sel.Name != "mux" {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		require.True(t, ok && lit.Kind == token.STRING, "routes.go registers a pattern that is not a string literal")
		p, err := strconv.Unquote(lit.Value)
		require.NoError(t, err)
		if strings.Contains(p, " ") { // the catch-alls ("/api/", "/") have no method
			patterns = append(patterns, p)
		}
		return true
	})
	return patterns
}

func TestOpenAPIIsVersion31(t *testing.T) {
	doc := loadOpenAPI(t)
	assert.Regexp(t, `^3\.1\.\d+$`, doc.OpenAPI)
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	routes := registeredRoutes(t)
	require.Greater(t, len(routes), 50, "routes.go was not read")
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		_, ok := doc.Paths[path][strings.ToLower(method)]
		assert.True(t, ok, "routes.go serves %s but openapi.json does not describe it", r)
	}
}

func TestOpenAPIDescribesOnlyServedRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	s := &Server{mux: http.NewServeMux(), Deps: Deps{Metrics: metrics.New(metrics.Options{})}} // GET /metrics is served with the metrics on
	s.routes()
	param := regexp.MustCompile(`\{[^}]+\}`)
	n := 0
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "parameters", "summary", "description", "servers":
				continue
			}
			n++
			m := strings.ToUpper(method)
			req := httptest.NewRequest(m, param.ReplaceAllString(path, "x1"), nil)
			_, pattern := s.mux.Handler(req)
			assert.Equal(t, m+" "+path, pattern, "openapi.json describes %s %s, which the router does not serve as such", m, path)
		}
	}
	assert.Equal(t, len(registeredRoutes(t)), n, "openapi.json describes a different number of operations than routes.go registers")
}

func TestOpenAPIReferencesResolve(t *testing.T) {
	doc := loadOpenAPI(t)
	refs := regexp.MustCompile(`"\$ref":\s*"([^"]*)"`).FindAllSubmatch(openAPIDocument, -1)
	require.NotEmpty(t, refs)
	for _, r := range refs {
		name, ok := strings.CutPrefix(string(r[1]), "#/components/schemas/")
		if assert.True(t, ok, "unexpected reference %s", r[1]) {
			assert.Contains(t, doc.Components.Schemas, name, "reference %s names no schema", r[1])
		}
	}
}
