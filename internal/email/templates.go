// Package email writes svc's emails and hands them to the email transport.
// Templates are pure functions of their data, returning a plain-text and an
// HTML body; golden files pin their output.
package email

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
	"time"
)

// Message is a written email, without its addresses.
type Message struct {
	Subject string
	Text    string
	HTML    string
}

// Invite is what an invitation says.
type Invite struct {
	OrgName     string
	InviterName string
	Role        string
	AcceptURL   string
	ExpiresAt   time.Time
}

// Verify is what an address verification says.
type Verify struct {
	Name      string
	VerifyURL string
}

// Reset is what a password reset says.
type Reset struct {
	Name      string
	ResetURL  string
	ExpiresIn time.Duration
}

var layout = template.Must(template.New("layout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #1a1a1a; max-width: 36rem; margin: 2rem auto; padding: 0 1rem">
<h1 style="font-size: 1.25rem">{{.Title}}</h1>
{{range .Paragraphs}}<p>{{.}}</p>
{{end}}<p><a href="{{.URL}}" style="display: inline-block; padding: .6rem 1.2rem; background: #1f4fd8; color: #fff; text-decoration: none; border-radius: 6px">{{.Action}}</a></p>
<p style="font-size: .875rem; color: #555">Or open this link: <a href="{{.URL}}">{{.URL}}</a></p>
{{if .Footer}}<p style="font-size: .875rem; color: #555">{{.Footer}}</p>
{{end}}</body></html>
`))

type page struct {
	Title, Action, URL, Footer string
	Paragraphs                 []string
}

// render writes both bodies of a message from one page.
func render(subject string, p page) Message {
	var html bytes.Buffer
	if err := layout.Execute(&html, p); err != nil {
		panic(err) // the layout and its data are fixed
	}
	var text strings.Builder
	for _, para := range p.Paragraphs {
		text.WriteString(para + "\n\n")
	}
	text.WriteString(p.Action + ": " + p.URL + "\n")
	if p.Footer != "" {
		text.WriteString("\n" + p.Footer + "\n")
	}
	return Message{Subject: subject, Text: text.String(), HTML: html.String()}
}

// InviteEmail invites someone to an organization.
func InviteEmail(d Invite) Message {
	invited := fmt.Sprintf("You have been invited to join %s on svc as %s.", d.OrgName, article(d.Role))
	if d.InviterName != "" {
		invited = fmt.Sprintf("%s has invited you to join %s on svc as %s.", d.InviterName, d.OrgName, article(d.Role))
	}
	return render(fmt.Sprintf("You are invited to %s on svc", d.OrgName), page{
		Title:      "Join " + d.OrgName,
		Paragraphs: []string{invited},
		Action:     "Accept the invitation",
		URL:        d.AcceptURL,
		Footer: fmt.Sprintf("The invitation expires on %s. If you did not expect it, ignore this email.",
			d.ExpiresAt.UTC().Format("2 January 2006 at 15:04 UTC")),
	})
}

// VerifyEmail asks a new user to confirm their address.
func VerifyEmail(d Verify) Message {
	greeting := "Welcome to svc."
	if d.Name != "" {
		greeting = "Welcome to svc, " + d.Name + "."
	}
	return render("Verify your email address", page{
		Title:      "Verify your email address",
		Paragraphs: []string{greeting, "Please confirm that this address is yours."},
		Action:     "Verify my address",
		URL:        d.VerifyURL,
		Footer:     "If you did not sign up, ignore this email.",
	})
}

// PasswordResetEmail lets a user choose a new password.
func PasswordResetEmail(d Reset) Message {
	hello := "Hello,"
	if d.Name != "" {
		hello = "Hello " + d.Name + ","
	}
	return render("Reset your svc password", page{
		Title:      "Reset your password",
		Paragraphs: []string{hello, "Someone asked to reset the password of your svc account. Choose a new one with the link below."},
		Action:     "Choose a new password",
		URL:        d.ResetURL,
		Footer:     fmt.Sprintf("The link works once, for %s. If you did not ask, ignore this email: your password stays as it is.", d.ExpiresIn),
	})
}

func article(role string) string {
	switch {
	case role == "":
		return "a member"
	case strings.ContainsRune("aeiou", rune(role[0])):
		return "an " + role
	}
	return "a " + role
}
