package httpapi

import "net/http"

// routes lists every route. Each handler is wrapped by what it needs:
// api (a valid identity, the standard limiter), admin (api plus the admin
// right) or public.
func (s *Server) routes() {
	s.mux.Handle("GET /health", s.public(s.health))
	s.mux.Handle("GET /api/v1/openapi.json", s.public(s.openAPI))
	if s.Metrics != nil {
		// Metrics off: no route, a 404 like any unknown path, before any
		// credential is asked for.
		s.mux.Handle("GET /metrics", s.admin(s.metrics))
	}

	s.mux.Handle("POST /v1/chat/completions", s.gateway(s.chatCompletions))
	s.mux.Handle("GET /v1/models", s.gateway(s.models))
	s.mux.Handle("POST /v1/embeddings", s.gateway(s.embeddings))
	s.mux.Handle("POST /v1/responses", s.gateway(s.createResponse))
	s.mux.Handle("GET /v1/responses/{id}", s.gateway(s.getResponse))
	s.mux.Handle("DELETE /v1/responses/{id}", s.gateway(s.deleteResponse))
	s.mux.Handle("GET /v1/responses/{id}/input_items", s.gateway(s.listInputItems))
	s.mux.Handle("POST /v1/responses/{id}/cancel", s.gateway(s.cancelResponse))

	s.mux.Handle("POST /api/v1/keys", s.admin(s.createKey))
	s.mux.Handle("GET /api/v1/keys", s.admin(s.listKeys))
	s.mux.Handle("POST /api/v1/keys/{id}/revoke", s.admin(s.revokeKey))

	s.mux.Handle("GET /api/v1/settings", s.api(s.getSettings))
	s.mux.Handle("PUT /api/v1/settings", s.admin(s.putSettings))

	s.mux.Handle("POST /api/v1/auth/login", s.cookieWrite(s.login))
	s.mux.Handle("POST /api/v1/auth/logout", s.cookieWrite(s.logout))
	s.mux.Handle("GET /api/v1/auth/me", s.api(s.me))
	s.mux.Handle("POST /api/v1/auth/password-reset", s.cookieWrite(s.requestPasswordReset))
	s.mux.Handle("POST /api/v1/auth/password-reset/{token}", s.cookieWrite(s.resetPassword))
	s.mux.Handle("POST /api/v1/auth/signup", s.cookieWrite(s.signup))
	s.mux.Handle("GET /api/v1/auth/verify/{token}", s.public(s.verifyEmail))
	s.mux.Handle("POST /api/v1/auth/verify/resend", s.api(s.resendVerification))

	s.mux.Handle("GET /api/v1/orgs", s.api(s.listOrgs))
	s.mux.Handle("POST /api/v1/orgs", s.api(s.createOrg))
	s.mux.Handle("POST /api/v1/orgs/switch", s.api(s.switchOrg))
	s.mux.Handle("GET /api/v1/orgs/active", s.api(s.activeOrg))
	s.mux.Handle("PATCH /api/v1/orgs/active", s.admin(s.renameOrg))
	s.mux.Handle("DELETE /api/v1/orgs/active", s.admin(s.deleteOrg))
	s.mux.Handle("PATCH /api/v1/orgs/active/members/{userId}", s.admin(s.setMemberRole))
	s.mux.Handle("DELETE /api/v1/orgs/active/members/{userId}", s.admin(s.removeMember))
	s.mux.Handle("POST /api/v1/orgs/active/leave", s.api(s.leaveOrg))
	s.mux.Handle("POST /api/v1/orgs/active/invites", s.admin(s.createInvite))
	s.mux.Handle("GET /api/v1/orgs/active/invites", s.admin(s.listInvites))
	s.mux.Handle("POST /api/v1/orgs/active/invites/{id}/revoke", s.admin(s.revokeInvite))
	s.mux.Handle("GET /api/v1/invites/{token}", s.public(s.lookupInvite))
	s.mux.Handle("POST /api/v1/invites/{token}/accept", s.cookieWrite(s.acceptInvite))

	s.mux.Handle("GET /api/v1/audit", s.api(s.listAudit))

	s.mux.Handle("GET /api/v1/runs", s.api(s.listRuns))
	s.mux.Handle("GET /api/v1/runs/stream", s.api(s.streamRuns))
	s.mux.Handle("GET /api/v1/runs/{id}", s.api(s.getRun))
	s.mux.Handle("GET /api/v1/runs/{id}/integrity", s.api(s.runIntegrity))
	s.mux.Handle("GET /api/v1/runs/{id}/replay-bundle", s.api(s.replayBundle))
	s.mux.Handle("POST /api/v1/runs/{id}/feedback", s.api(s.runFeedback))
	s.mux.Handle("POST /api/v1/trace", s.api(s.trace))
	s.mux.Handle("GET /api/v1/agents", s.api(s.listAgents))
	s.mux.Handle("GET /api/v1/ledger/checkpoints", s.api(s.listCheckpoints))
	s.mux.Handle("GET /api/v1/ledger/key", s.api(s.ledgerKey))

	s.mux.Handle("GET /api/v1/savings", s.api(s.savings))
	s.mux.Handle("GET /api/v1/spend", s.api(s.spendReport))
	s.mux.Handle("GET /api/v1/budgets", s.api(s.listBudgets))
	s.mux.Handle("PUT /api/v1/budgets", s.admin(s.putBudgets))
	s.mux.Handle("DELETE /api/v1/budgets/{id}", s.admin(s.deleteBudget))
	s.mux.Handle("GET /api/v1/cache/stats", s.api(s.cacheStats))
	s.mux.Handle("POST /api/v1/cache/invalidate", s.admin(s.invalidateCache))
	s.mux.Handle("POST /api/v1/tool-cache/check", s.api(s.toolCacheCheck))
	s.mux.Handle("POST /api/v1/tool-cache/store", s.api(s.toolCacheStore))

	s.mux.Handle("GET /api/v1/policies", s.api(s.listPolicies))
	s.mux.Handle("GET /api/v1/policies/{id}/verdicts", s.api(s.policyVerdicts))
	s.mux.Handle("POST /api/v1/policies/reload", s.admin(s.reloadPolicies))
	s.mux.Handle("GET /api/v1/providers", s.admin(s.listProviders))
	s.mux.Handle("POST /api/v1/providers/reload", s.admin(s.reloadProviders))
	s.mux.Handle("GET /api/v1/approvals", s.api(s.listApprovals))
	s.mux.Handle("POST /api/v1/approvals/{id}/approve", s.admin(s.approve))
	s.mux.Handle("POST /api/v1/approvals/{id}/reject", s.admin(s.reject))

	s.mux.Handle("GET /api/v1/jobs", s.api(s.listJobs))

	s.mux.Handle("GET /api/v1/patterns", s.api(s.listPatterns))
	s.mux.Handle("GET /api/v1/patterns/{id}", s.api(s.getPattern))
	s.mux.Handle("POST /api/v1/patterns/{id}/synthesize", s.admin(s.synthesizePattern))
	s.mux.Handle("POST /api/v1/patterns/{id}/ignore", s.admin(s.ignorePattern))
	s.mux.Handle("GET /api/v1/artifacts", s.api(s.listArtifacts))
	s.mux.Handle("GET /api/v1/artifacts/{id}", s.api(s.getArtifact))
	s.mux.Handle("POST /api/v1/artifacts/{id}/promote", s.admin(s.promoteArtifact))
	s.mux.Handle("POST /api/v1/artifacts/{id}/rollback", s.admin(s.rollbackArtifact))
	s.mux.Handle("POST /api/v1/artifacts/{id}/quarantine", s.admin(s.quarantineArtifact))
	s.mux.Handle("POST /api/v1/artifacts/{id}/replay", s.admin(s.replayArtifact))
	s.mux.Handle("GET /api/v1/learning/report", s.api(s.learningReport))
	s.mux.Handle("POST /api/v1/learning/tick", s.admin(s.learningTick))

	s.mux.Handle("POST /api/v1/web/fetch", s.api(s.webFetch))
	s.mux.Handle("GET /api/v1/web/snapshots", s.api(s.listSnapshots))
	s.mux.Handle("GET /api/v1/web/snapshots/{id}", s.api(s.getSnapshot))
	s.mux.Handle("POST /api/v1/web/sessions", s.api(s.openWebSession))
	s.mux.Handle("GET /api/v1/web/sessions", s.api(s.listWebSessions))
	s.mux.Handle("POST /api/v1/web/sessions/{id}/act", s.api(s.actWebSession))
	s.mux.Handle("DELETE /api/v1/web/sessions/{id}", s.api(s.closeWebSession))

	s.mux.Handle("GET /api/v1/workflows", s.api(s.listWorkflows))
	s.mux.Handle("GET /api/v1/orgs/active/onboarding", s.api(s.getOnboarding))
	s.mux.Handle("POST /api/v1/orgs/active/onboarding/dismiss", s.api(s.dismissOnboarding))
	s.mux.Handle("POST /api/v1/orgs/active/seed-demo", s.admin(s.seedDemo))

	// The account pages; GET patterns answer HEAD too.
	s.mux.Handle("GET /accept-invite", s.public(s.page("accept-invite.html")))
	s.mux.Handle("GET /reset-password", s.public(s.page("reset-password.html")))
	s.mux.Handle("GET /verify-email", s.public(s.page("verify-email.html")))

	s.mux.Handle("/api/", s.public(s.noRoute))
	s.mux.Handle("/v1/", s.public(s.noRoute))
	s.mux.Handle("/", s.public(s.static))
}

// noRoute answers an unknown API path: 405 when the path exists with other
// methods, else 404, as JSON.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/api/" && pattern != "/v1/" && pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		return methodNotAllowed(w, allowed)
	}
	return notFound("no route for " + r.Method + " " + r.URL.Path)
}
