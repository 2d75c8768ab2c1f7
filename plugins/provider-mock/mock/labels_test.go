package mock

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-gateway/svc/pkg/pluginapi"
)

func TestLabelSelection(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for _, tc := range []struct {
			name      string
			sys, user string
			want      string
		}{
			{"classify into one of (system)",
				"You are a support triage assistant. Classify the user's ticket into one of: billing, bug, feature_request. Reply with the label only.",
				"I was charged twice for my subscription this month, please refund the extra payment.", "billing"},
			{"Labels: list",
				"Labels: billing, bug, feature_request",
				"The app crashes every time I open the settings page.", "bug"},
			{"instruction and ticket in one user message",
				"", "Categorize this ticket as billing, bug, or feature_request.\n\nTicket: It would be nice if you could add support for dark mode.", "feature_request"},
			{"respond with one of [...]",
				"Respond with one of [billing, bug, feature_request, account].",
				"I forgot my password and now I'm locked out of my account.", "account"},
			{"bulleted list with descriptions",
				"Classify the following support ticket into one of the following categories:\n- billing: invoices, charges and refunds\n- shipping: deliveries and tracking\n- cancellation: ending a subscription\n- other",
				"My package still hasn't arrived and the tracking number doesn't work.", "shipping"},
			{"numbered list, multi-word labels",
				"Categories:\n1. Billing\n2. Technical Issue\n3. Feature Request\n4. Account Access",
				"I get an error 500 when I try to export my report.", "Technical Issue"},
			{"options with pipes",
				"Which queue should this go to? Options: billing | bug | feature_request | cancellation",
				"Please cancel my subscription and unsubscribe me from all emails.", "cancellation"},
			{"sentiment positive", "",
				"Classify the sentiment of this review as positive, negative, or neutral: The food was amazing and the staff were so friendly!", "positive"},
			{"sentiment negative", "",
				"Classify the sentiment of this review as positive, negative, or neutral: Worst service ever, cold food and a rude waiter.", "negative"},
			{"sentiment with no signal falls back to neutral", "",
				"Classify the sentiment of this review as positive, negative, or neutral: We had dinner there on Tuesday.", "neutral"},
			{"either quoted spam", "",
				"Is this email spam? Answer with either \"spam\" or \"not_spam\".\n\nCongratulations, you are a winner! Click here to claim your free prize.", "spam"},
			{"either quoted ham", "",
				"Is this email spam? Answer with either \"spam\" or \"not_spam\".\n\nHi team, the meeting is moved to 3pm tomorrow.", "not_spam"},
			{"choose from, capitalised labels",
				"Which department should handle this? Choose from: Sales, Support, Billing.",
				"We'd like a quote for 50 enterprise seats.", "Sales"},
			{"labels are ... and ...",
				"You triage tickets. Possible labels are billing, bug and feature_request.",
				"Could you add an export to CSV option? Would be really useful.", "feature_request"},
			{"route to one of these teams",
				"Route the ticket to one of these teams: billing, engineering, shipping, accounts.",
				"Where is my parcel? Tracking says in transit for 2 weeks.", "shipping"},
			{"reply with: a | b | c",
				"Reply with: positive | negative | neutral",
				"Thanks so much, the support team was super helpful!", "positive"},
			{"label from this list, numbered with )",
				"Assign exactly one label from this list:\n1) billing\n2) bug\n3) feature_request\nRespond with the label only.",
				"Refund please, the invoice amount is wrong.", "billing"},
			{"intents with dash descriptions",
				"Classify the intent.\nIntents:\n* order_status - where is my order\n* return_item - return or exchange a product\n* talk_to_human - ask for an agent",
				"I want to send back these shoes, they're the wrong size", "return_item"},
			{"backticks, no signal goes to other",
				"Categorize each message as `billing`, `bug` or `other`.",
				"Hello, what time do you open tomorrow?", "other"},
			{"list followed by more words",
				"Label the ticket as billing, bug, or feature_request based on the text below.",
				"Getting an exception when saving drafts, it fails every time", "bug"},
			{"parenthesised one of",
				"Priority (one of: low, medium, high):",
				"Production is down for all users, please help ASAP!", "high"},
			{"ticket before the instruction", "",
				"My card was charged twice and I need a refund.\n\nClassify the ticket above into one of: bug, billing, feature_request.", "billing"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var msgs []msg
				if tc.sys != "" {
					msgs = append(msgs, sys(tc.sys))
				}
				msgs = append(msgs, user(tc.user))
				assert.Equal(t, tc.want, content(t, p, body(t, nil, msgs...)))
			})
		}
	})
}

func TestLabelsFollowTheTicket(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		system := sys("You are a triage bot. Classify each ticket into one of: billing, bug, feature_request, account, shipping, cancellation. Answer with the label only.")
		tickets := map[string][]string{
			"billing": {
				"Why is there an extra charge on my invoice?",
				"I was billed twice this month, I want my money back.",
				"My credit card payment was declined but the price was still taken.",
			},
			"bug": {
				"The export button throws an error and the page crashes.",
				"Search doesn't work anymore since the last update.",
				"The app freezes and then fails with an exception.",
			},
			"feature_request": {
				"It would be nice to have a dark mode.",
				"Please add support for exporting to PDF.",
				"I wish I could schedule reports; could you add that option?",
			},
			"account": {
				"I can't log in, it says my password is wrong.",
				"My account is locked after too many sign in attempts.",
				"I never received the 2FA verification code.",
			},
			"shipping": {
				"My package has not arrived yet, the tracking page shows nothing.",
				"The courier lost my parcel, where is my delivery?",
			},
			"cancellation": {
				"Please cancel my subscription effective today.",
				"How do I unsubscribe and close my account?",
			},
		}
		seen := map[string]bool{}
		for want, list := range tickets {
			for _, ticket := range list {
				b := body(t, nil, system, user(ticket))
				got := content(t, p, b)
				assert.Equal(t, want, got, ticket)
				assert.Equal(t, got, content(t, p, b), "same ticket, same label")
				seen[got] = true
			}
		}
		assert.Len(t, seen, len(tickets), "different tickets get different labels")
	})
}

func TestNoLabelsInOrdinaryPrompts(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		for _, tc := range []struct{ sys, user string }{
			{"You are a helpful assistant. You can either answer directly or ask a clarifying question.", "How do I reverse a list in Python?"},
			{"", "Here are my options: I could go to Paris or London. Which one?"},
			{"", "I'm one of your oldest customers, and I love the product."},
			{"", "Please sort these numbers: 5, 3, 9, 1"},
			{"", "What's the difference between TCP and UDP?"},
			{"", "Write a haiku about either cats or dogs"},
			{"You are a travel agent. One of the following rules applies: be concise.", "Plan a trip to Rome"},
		} {
			var msgs []msg
			if tc.sys != "" {
				msgs = append(msgs, sys(tc.sys))
			}
			msgs = append(msgs, user(tc.user))
			got := content(t, p, body(t, nil, msgs...))
			assert.True(t, strings.HasPrefix(got, answerPrefix), "%q → %q", tc.user, got)
		}
	})
}

func TestDetectLabelsShapes(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Classify into one of: a1, b2, c3", []string{"a1", "b2", "c3"}},
		{"Labels:\n\n- alpha\n- beta\n- gamma\n\nTicket: x", []string{"alpha", "beta", "gamma"}},
		{"Categories:\nbilling\nbug\nother\n\nText follows.", []string{"billing", "bug", "other"}},
		{"Pick one of the following options:\na) yes\nb) no\nc) maybe", []string{"yes", "no", "maybe"}},
		{"Categories (pick one): red, green, blue", []string{"red", "green", "blue"}},
		{"Return exactly one of 'urgent', 'normal' or 'low'.", []string{"urgent", "normal", "low"}},
		{"Classify as one of: **billing** - money matters, **bug** - broken things", []string{"billing", "bug"}},
		{"Reply with one of the following categories: billing, bug, etc.", []string{"billing", "bug"}},
		{"Allowed values: cat/dog/bird", []string{"cat", "dog", "bird"}},
		{"Respond with either yes or no.", []string{"yes", "no"}},
	} {
		ll, ok := detectLabels(tc.text)
		require.True(t, ok, tc.text)
		var got []string
		for _, it := range ll.items {
			got = append(got, it.text)
		}
		assert.Equal(t, tc.want, got, tc.text)
	}
}

func TestLabelInstructionIsNotScored(t *testing.T) {
	modes(t, func(t *testing.T, p pluginapi.Provider) {
		// The label words in the instruction must not vote: the ticket decides.
		b := body(t, nil, user("Classify as bug or billing: the app crashes on startup"))
		assert.Equal(t, "bug", content(t, p, b))
		b = body(t, nil, user("Classify as bug or billing: I need a copy of my invoice"))
		assert.Equal(t, "billing", content(t, p, b))
	})
}

func TestStemming(t *testing.T) {
	groups := [][]string{
		{"charge", "charged", "charges", "charging"},
		{"cancel", "cancelled", "canceled", "cancels", "cancelling"},
		{"refund", "refunds", "refunded"},
		{"invoice", "invoices", "invoiced"},
		{"crash", "crashes", "crashed", "crashing"},
		{"ship", "shipping", "shipped"},
		{"delivery", "deliveries"},
		{"bill", "billing", "billed", "bills"},
	}
	for _, g := range groups {
		for _, w := range g[1:] {
			assert.Equal(t, stem(g[0]), stem(w), "%s vs %s", g[0], w)
		}
	}
	assert.Equal(t, []string{"it", "doe", "not", "work", "i", "can", "not", "log", "in"}, scoringWords("It doesn't work; I can't log in"))
}
