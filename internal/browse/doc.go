// Package browse is what agents do on the web through svc: the Service
// fetches a page through the guarded fetcher and compiles it into a SOM
// (som cache tier, stored snapshots, diffs against the last one, the
// external compiler for pages only scripts draw), and Sessions keep an
// agent's browsing state and carry out its clicks, typing and form
// submissions, each judged by the web policies and audited.
package browse
