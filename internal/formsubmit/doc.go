// Package formsubmit builds the request that submitting an HTML form makes,
// following the HTML Living Standard's form-submission algorithm, so that
// servers see what a browser would send: the entry list (controls in tree
// order, disabled ones and unchecked boxes left out, the submitter's own
// entry), the submitter's overrides of action, method and enctype, and the
// urlencoded, multipart and text/plain encodings.
//
// It works on a parsed tree and the agent's State and sends nothing; the
// caller sends the Submission.
package formsubmit
