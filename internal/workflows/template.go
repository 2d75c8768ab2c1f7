package workflows

// Template is a workflow ready to instantiate: the name the workflow gets,
// what it is for, and its definition.
type Template struct {
	ID          string // the template's name, kept on each workflow made from it
	Name        string // the name of the workflow it makes
	Description string
	Definition  Definition
}

// SupportTriageID names the support-triage template.
const SupportTriageID = "support-triage"

// DemoAgent is the agent seed-demo creates, and the agent the demo
// workflow's calls run as.
const DemoAgent = "demo-triage-agent"

// TriageLabels are the labels the support-triage classifier chooses from,
// with what each covers.
var TriageLabels = [][2]string{
	{"billing", "invoices, charges, refunds and payment methods"},
	{"bug", "something in the product is broken, fails or shows an error"},
	{"account", "signing in, passwords, locked accounts and access"},
	{"feature_request", "a capability the customer wishes the product had"},
	{"other", "anything else"},
}

var zero = 0.0

// SupportTriage returns the support-triage template: a ticket is classified
// by one chat-completions call whose system prompt lists the labels, then
// routed to a queue by its label. Every call is the same prompt with a
// different ticket and a one-label answer, the shape the learning loop
// turns into a pattern and then an artifact. The samples are tickets a demo
// replays, each with the label it should get.
func SupportTriage() Template {
	labels := make([]string, len(TriageLabels))
	for i, l := range TriageLabels {
		labels[i] = l[0]
	}
	return Template{
		ID:          SupportTriageID,
		Name:        "Support triage",
		Description: "Classifies each support ticket as billing, bug, account, feature_request or other, and routes it to the team that owns that label.",
		Definition: Definition{
			Version: 1,
			App:     "support-triage",
			Agent:   DemoAgent,
			Inputs:  []string{"subject", "body"},
			Steps: []Step{
				{
					ID:          "classify",
					Kind:        StepChat,
					Description: "Label the ticket.",
					Model:       "gpt-4o-mini",
					Temperature: &zero,
					Messages: []Message{
						{Role: "system", Content: labelPrompt("You triage customer support tickets. Classify the ticket into one of these labels:", TriageLabels)},
						{Role: "user", Content: "Subject: {{input.subject}}\n\n{{input.body}}"},
					},
					Labels: labels,
				},
				{
					ID:          "route",
					Kind:        StepRoute,
					Description: "Send the ticket to the queue that owns its label.",
					From:        "classify",
					Routes: map[string]string{
						"billing":         "billing",
						"bug":             "engineering",
						"account":         "account-support",
						"feature_request": "product",
					},
					Default: "support",
				},
			},
			Samples: []Sample{
				triageSample("t1", "Charged twice this month",
					"I was charged twice for my invoice this month. Please refund the duplicate payment.", "billing"),
				triageSample("t2", "Export crashes",
					"The CSV export fails with an error and the app crashes every time I click download.", "bug"),
				triageSample("t3", "Locked out after password reset",
					"I cannot log in since I reset my password. It says my account is locked.", "account"),
				triageSample("t4", "Dark mode please",
					"It would be nice if you added a dark mode. Support for keyboard shortcuts would be great too.", "feature_request"),
				triageSample("t5", "Update my card",
					"How do I change the credit card you bill for our subscription?", "billing"),
				triageSample("t6", "Dashboard is blank",
					"Since the last update the dashboard is broken and only shows a blank page.", "bug"),
				triageSample("t7", "Thank you",
					"Just wanted to say thanks to Maria for the great onboarding call yesterday.", "other"),
			},
		},
	}
}

func triageSample(id, subject, body, label string) Sample {
	return Sample{
		ID:     id,
		Input:  map[string]string{"subject": subject, "body": body},
		Expect: map[string]string{"classify": label},
	}
}
