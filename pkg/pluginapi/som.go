package pluginapi

import "context"

// PageCompiler turns a fetched web page into a SOM snapshot: the slot of an
// external page compiler that replaces svc's built-in one.
type PageCompiler interface {
	// Compile returns the SOM of page as JSON.
	Compile(ctx context.Context, page Page) ([]byte, error)
}

// Page is a fetched web page.
type Page struct {
	URL         string
	HTML        []byte
	ContentType string
}
