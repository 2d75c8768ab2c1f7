package netguard_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/svc-gateway/svc/pkg/netguard"
)

func ExampleGuard_CheckURL() {
	var g netguard.Guard
	_, err := g.CheckURL(context.Background(), "http://0x7f.1/")
	fmt.Println(errors.Is(err, netguard.ErrBlocked), err)
	_, err = g.CheckURL(context.Background(), "gopher://8.8.8.8/")
	fmt.Println(errors.Is(err, netguard.ErrInvalidURL), err)
	// Output:
	// true host "0x7f.1" (127.0.0.1) is a loopback address
	// true invalid url: scheme "gopher" is not allowed (use http or https)
}

// A guarded client checks every dial, including each redirect hop, on the
// address actually dialed. A refusal surfaces from client.Do as a *url.Error
// for which errors.Is(err, netguard.ErrBlocked) is true.
func ExampleGuard_ControlFor() {
	g := &netguard.Guard{Ports: []uint16{80, 443}}
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			Proxy: nil, // a proxy would hide the real destination from the guard
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, _, _ := net.SplitHostPort(addr)
				d := &net.Dialer{Timeout: 10 * time.Second, Control: g.ControlFor(host)}
				return d.DialContext(ctx, network, addr)
			},
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			_, err := g.CheckURL(req.Context(), req.URL.String())
			return err
		},
	}
	_ = client
}
