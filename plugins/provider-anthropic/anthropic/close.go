package anthropic

// Close drops the instance's idle upstream connections, so that an
// instance a reload retired holds no sockets. svc calls it when it runs the
// provider in its process.
func (p *Provider) Close() {
	p.client.CloseIdleConnections()
}
