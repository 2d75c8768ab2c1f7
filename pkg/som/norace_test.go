package som

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestNoGoroutines keeps true what lets `make test` run this package's
// tests without the race detector (see the Makefile's test-go): no file of
// the package, its tests included, starts a goroutine, so the detector has
// no two goroutines here to watch. A test of concurrent use belongs with
// the callers, whose tests run under it.
func TestNoGoroutines(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a go statement; run this package's tests under the race detector again (Makefile, test-go)", fset.Position(g.Pos()))
			}
			return true
		})
	}
}
