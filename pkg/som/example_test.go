package som_test

import (
	"errors"
	"fmt"

	"github.com/svc-gateway/svc/pkg/som"
)

// Compile a page, pick an element by what it is, and act on it only if the
// page it is acted on still has the same element.
func Example() {
	page := `<title>Search</title><form action="/search"><input name=q aria-label=Query><button>Go</button></form>`
	seen, _, err := som.Compile(som.Input{HTML: []byte(page), URL: "https://shop.example/"})
	if err != nil {
		panic(err)
	}
	var query som.Element
	for _, e := range seen.Elements {
		if e.Kind == som.KindInput && e.Field == "q" {
			query = e
		}
	}
	fmt.Println(seen.Meta.Title, query.Kind, query.Name)

	// The same page, served again with the form posting elsewhere.
	moved := `<title>Search</title><form action="https://elsewhere.example/search"><input name=q aria-label=Query><button>Go</button></form>`
	_, now, err := som.Compile(som.Input{HTML: []byte(moved), URL: "https://shop.example/", Previous: seen})
	if err != nil {
		panic(err)
	}
	_, _, err = now.Resolve(query.ID, seen)
	var stale *som.StaleError
	fmt.Println(errors.Is(err, som.ErrStale), errors.As(err, &stale) && stale.ID == query.ID)

	_, _, err = now.Resolve("e_00000000", seen)
	fmt.Println(errors.Is(err, som.ErrNotFound))

	_, _, err = som.Compile(som.Input{HTML: []byte(page), URL: "file:///etc/passwd"})
	fmt.Println(errors.Is(err, som.ErrInvalidURL))
	// Output:
	// Search input Query
	// true true
	// true
	// true
}
