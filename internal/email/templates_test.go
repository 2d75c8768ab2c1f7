package email

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestTemplatesMatchTheirGoldenFiles(t *testing.T) {
	cases := map[string]Message{
		"invite": InviteEmail(Invite{OrgName: "Acme <Support>", InviterName: "Ann", Role: "admin",
			AcceptURL: "https://svc.example.com/accept-invite?token=tok_abc&x=1", ExpiresAt: time.Date(2030, 6, 8, 12, 0, 0, 0, time.UTC)}),
		"verify": VerifyEmail(Verify{Name: "Bob", VerifyURL: "https://svc.example.com/verify-email?token=tok_def"}),
		"reset":  PasswordResetEmail(Reset{Name: "Bob", ResetURL: "https://svc.example.com/reset-password?token=tok_ghi", ExpiresIn: time.Hour}),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			for ext, body := range map[string]string{"subject": m.Subject, "txt": m.Text, "html": m.HTML} {
				path := filepath.Join("testdata", name+"."+ext+".golden")
				if *update {
					require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err, "run go test ./internal/email -update to write it")
				assert.Equal(t, string(want), body, path)
			}
		})
	}
}

func TestTemplatesArePure(t *testing.T) {
	d := Invite{OrgName: "Acme", Role: "member", AcceptURL: "https://x/accept-invite?token=t", ExpiresAt: time.Unix(0, 0)}
	assert.Equal(t, InviteEmail(d), InviteEmail(d))
}

func TestAnInviteWithoutInviter(t *testing.T) {
	m := InviteEmail(Invite{OrgName: "Acme", Role: "member", AcceptURL: "https://x/accept-invite?token=t"})
	assert.Contains(t, m.Text, "You have been invited to join Acme on svc as a member.")
}

func TestHTMLIsEscaped(t *testing.T) {
	m := InviteEmail(Invite{OrgName: `<script>alert(1)</script>`, Role: "member", AcceptURL: `javascript:alert(1)`})
	assert.NotContains(t, m.HTML, "<script>")
	assert.NotContains(t, m.HTML, `href="javascript:`, "an unsafe URL is neutralised")
}
