package openai

// Close drops the idle upstream connections of the instance's own client,
// so that an instance a reload retired holds no sockets. svc calls it when
// it runs the provider in its process; the shared default client is left
// alone.
func (u *Upstream) Close() {
	if u.Client != nil {
		u.Client.CloseIdleConnections()
	}
}
