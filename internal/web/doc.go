// Package web fetches pages for the semantic-web features and builds the
// requests that submitting a form makes.
//
// Every request leaves through a Fetcher, whose client checks each address
// it dials with netguard after name resolution: the first request, every
// redirect hop, and, because the session layer sends links and form actions
// through the same Fetcher, every navigation an agent makes. A URL check
// alone cannot catch a name that resolves inside or rebinds between the
// check and the dial; the dial-time check can.
//
// BuildSubmission turns a form, its submitter and the agent's input into the
// request a browser would send, following the HTML Living Standard's
// form-submission algorithm, so that servers see what they expect.
package web
