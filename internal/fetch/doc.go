// Package fetch fetches pages for the semantic-web features through a
// client that only reaches public addresses.
//
// Every request leaves through a Fetcher, whose client checks each address
// it dials with netguard after name resolution: the first request, every
// redirect hop, and, because web sessions send links and form actions
// through the same Fetcher, every navigation an agent makes. A URL check
// alone cannot catch a name that resolves inside or rebinds between the
// check and the dial; the dial-time check can.
package fetch
