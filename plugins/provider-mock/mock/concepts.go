package mock

import "strings"

// Label scoring.
//
// Each label is scored against the words of the text being classified
// (normalised and stemmed by scoringWords):
//
//   - a word of the label itself ("bug", "feature" in feature_request)
//     scores 3; a generic label word ("request", "issue", "account",
//     "question", ...) scores 1;
//   - a word of the label's description in the prompt scores 1;
//   - a label word that names a concept of the built-in synonym table
//     (billing, bug, feature, account/login, shipping, cancellation,
//     refund/returns, sentiment, priority, spam, security, sales,
//     question, privacy, integration, a few news topics, greetings) brings
//     that concept's keywords: 2 each (1 for weak ones), and 2 per matched
//     phrase ("not work", "charged twice", "would be nice");
//
// A text word counts once per label, at its best weight; scores add up over
// the text. The highest score wins; ties go to the label listed first. With
// no signal at all the answer is a catch-all label if the list has one
// ("other", "general", "unknown", "neutral", "medium", "not_spam", ...), or
// else the first label.

type conceptDef struct {
	keys  string // label words (space separated) that bring in this concept
	words string // comma separated keywords or phrases; a leading '!' marks a weak one
}

var conceptDefs = []conceptDef{
	{ // billing / payments
		keys:  "bill billing payment payments invoice invoices invoicing charge charges finance financial money accounting",
		words: "invoice, charge, overcharge, overcharged, refund, payment, pay, paid, bill, billing, card, credit card, debit, price, cost, fee, fees, receipt, money, transaction, purchase, paypal, stripe, charged twice, double charged, double charge, money back, !expensive, !discount, !coupon, vat, tax, bank",
	},
	{ // bugs / technical problems
		keys:  "bug bugs defect defects technical tech error errors incident crash crashes malfunction broken outage engineering development dev",
		words: "error, bug, crash, broken, broke, break, fail, failure, exception, glitch, freeze, frozen, hang, stuck, timeout, not work, stopped work, not load, blank screen, 500, 404, stack trace, traceback, !slow, !wrong, !problem, !issue, keeps crashing, does nothing",
	},
	{ // feature requests
		keys:  "feature features enhancement enhancements suggestion suggestions idea ideas wishlist improvement improvements roadmap",
		words: "add, support for, would be nice, would love, would be great, would be helpful, it would be, wish, suggest, suggestion, feature, idea, improve, improvement, enhancement, ability to, option to, possible to, please add, dark mode, integrate, integration, roadmap, allow, !could you, !missing",
	},
	{ // account access
		keys:  "account accounts login logins log sign signin auth authentication access password credentials 2fa mfa sso",
		words: "password, login, log in, sign in, signin, locked, lock, locked out, unlock, reset, reset password, forgot password, username, two factor, 2fa, mfa, otp, verification code, not access, not log, not sign, authenticate, authentication, credential, sso, !account, !profile",
	},
	{ // shipping / delivery
		keys:  "shipping ship delivery deliveries logistics fulfillment fulfilment shipment shipments",
		words: "deliver, delivery, package, parcel, track, tracking, tracking number, shipment, ship, shipping, courier, carrier, arrive, not arrived, not arrive, never arrived, late, lost, transit, in transit, ups, fedex, dhl, usps, postage, dispatch, warehouse, where is my order, !order, !address",
	},
	{ // cancellation / churn
		keys:  "cancel cancellation cancellations churn unsubscribe termination terminate close closure retention",
		words: "cancel, cancellation, unsubscribe, terminate, termination, close my account, delete my account, stop my subscription, end my subscription, cancel my subscription, opt out, quit, no longer, downgrade, !leave, !subscription",
	},
	{ // refunds / returns
		keys:  "refund refunds return returns exchange exchanges rma",
		words: "refund, return, exchange, send back, send it back, money back, defective, damaged, wrong size, wrong item, reimburse, reimbursement",
	},
	{ // positive sentiment
		keys:  "positive praise compliment compliments happy satisfied promoter",
		words: "love, great, excellent, amazing, awesome, fantastic, wonderful, perfect, happy, thank, thanks, good, best, helpful, recommend, pleased, delighted, impressed, well done, nice, friendly, enjoy, enjoyed, beautiful, fast",
	},
	{ // negative sentiment
		keys:  "negative complaint complaints complain angry unhappy dissatisfied detractor frustrated",
		words: "hate, terrible, awful, bad, worst, horrible, disappointed, disappointing, angry, annoyed, annoying, frustrating, frustrated, useless, poor, unacceptable, ridiculous, rude, waste, not happy, never again, not good, not recommend, !slow, !broken, !cold",
	},
	{ // neutral sentiment
		keys:  "neutral mixed",
		words: "okay, ok, fine, average, mediocre, decent, not sure, so so, !alright",
	},
	{ // high priority
		keys:  "urgent high critical p0 p1 emergency severe blocker asap sev1 sev0",
		words: "urgent, asap, immediately, emergency, critical, outage, down, right now, production, prod, blocking, blocker, as soon as possible, severe, all users, data loss, losing, !now",
	},
	{ // low priority
		keys:  "low minor p3 p4 trivial",
		words: "minor, no rush, whenever, when you get a chance, cosmetic, typo, small, low priority, not urgent, eventually, !nice to have",
	},
	{ // spam
		keys:  "spam junk phishing promotional promo scam",
		words: "free, winner, win, prize, click, click here, offer, limited time, congratulations, viagra, lottery, crypto, bitcoin, act now, cheap, !discount, claim, million, inheritance",
	},
	{ // security / fraud
		keys:  "security fraud abuse breach compromise compromised",
		words: "hack, hacked, hacker, breach, compromised, fraud, fraudulent, unauthorized, unauthorised, suspicious, scam, stolen, phishing, vulnerability, someone else, identity theft, malware",
	},
	{ // sales
		keys:  "sales sale pricing quote quotes enterprise demo presales lead leads upgrade",
		words: "quote, pricing, enterprise, demo, talk to sales, license, licence, seats, plan, upgrade, trial, buy, how much, procurement, volume, !discount, !price",
	},
	{ // questions / how-to
		keys:  "question questions howto how inquiry inquiries enquiry info information usage documentation docs",
		words: "how, how do, how to, how can, what, where, is there, is it possible, wondering, question, documentation, docs, explain, !help",
	},
	{ // privacy / legal
		keys:  "privacy gdpr data compliance legal",
		words: "gdpr, privacy, personal data, delete my data, my data, ccpa, consent, cookie, legal, compliance, dpa, lawyer",
	},
	{ // API / integrations
		keys:  "api integration integrations developer developers sdk webhook webhooks",
		words: "api, sdk, endpoint, webhook, integration, token, rate limit, 429, 401, json, request, response, !key",
	},
	{ // news topics
		keys: "sport sports", words: "game, team, score, match, player, league, season, coach, goal, tournament, championship, win",
	},
	{keys: "politics political government", words: "election, government, senate, president, vote, policy, parliament, minister, congress, campaign, law"},
	{keys: "technology tech science", words: "software, ai, computer, app, startup, chip, smartphone, internet, robot, research, algorithm"},
	{keys: "business economy finance markets", words: "market, stock, company, revenue, earnings, ceo, profit, investor, shares, economy, inflation"},
	{keys: "entertainment culture", words: "movie, film, music, celebrity, show, album, actor, actress, concert, series, netflix"},
	{keys: "health medical", words: "health, doctor, disease, vaccine, hospital, patient, symptom, medicine, covid, diet"},
	{ // greetings
		keys:  "greeting greetings hello",
		words: "hello, hi, hey, good morning, good afternoon, good evening, greetings",
	},
	{keys: "goodbye farewell", words: "bye, goodbye, see you, farewell, later"},
}

// weakLabelWords are label words too generic to be strong evidence.
var weakLabelWords = stemSet(`request requests issue issues problem problems question questions inquiry enquiry
support help report change update info information status customer ticket service management team user
product order orders account accounts general access`)

// ignoredLabelWords never count as evidence.
var ignoredLabelWords = stemSet(`other others general misc miscellaneous unknown none na n a the and or of to for
uncategorized unclassified not non no`)

// fallbackLabelWords make a label the catch-all answer when nothing scores.
var fallbackLabelWords = stemSet(`other others general misc miscellaneous unknown none uncategorized unclassified
neutral medium normal moderate ham legitimate p2`)

func stemSet(words string) map[string]bool {
	m := make(map[string]bool)
	for _, w := range strings.Fields(words) {
		m[stem(w)] = true
	}
	return m
}

type phrase struct {
	stems  []string
	weight int
}

type concept struct {
	words   map[string]int
	phrases []phrase
}

var (
	concepts     []concept
	conceptByKey = map[string][]int{}
)

func init() {
	concepts = make([]concept, len(conceptDefs))
	for i, d := range conceptDefs {
		c := concept{words: map[string]int{}}
		for _, k := range strings.Fields(d.keys) {
			k = stem(k)
			if l := conceptByKey[k]; len(l) == 0 || l[len(l)-1] != i {
				conceptByKey[k] = append(l, i)
			}
		}
		for _, w := range strings.Split(d.words, ",") {
			w = strings.TrimSpace(w)
			weight := 2
			if strings.HasPrefix(w, "!") {
				w, weight = w[1:], 1
			}
			st := scoringWords(w)
			switch {
			case len(st) == 1:
				if weight > c.words[st[0]] {
					c.words[st[0]] = weight
				}
			case len(st) > 1:
				c.phrases = append(c.phrases, phrase{stems: st, weight: weight})
			}
		}
		concepts[i] = c
	}
}

// labelProfile is what a label listens for.
type labelProfile struct {
	strong, weak, desc []string
	concepts           []int
	fallback           bool
}

func profileOf(l label) labelProfile {
	var p labelProfile
	words := scoringWords(splitIdentifier(l.text))
	if len(words) > 0 && (words[0] == "not" || words[0] == "non" || words[0] == "no") {
		p.fallback = true
		return p
	}
	for _, w := range words {
		if fallbackLabelWords[w] {
			p.fallback = true
		}
		if ignoredLabelWords[w] || len(w) < 2 {
			continue
		}
		if weakLabelWords[w] {
			p.weak = append(p.weak, w)
		} else {
			p.strong = append(p.strong, w)
		}
		for _, ci := range conceptByKey[w] {
			p.concepts = appendUniqueInt(p.concepts, ci)
		}
	}
	if l.desc != "" {
		for _, w := range scoringWords(l.desc) {
			if len(w) >= 4 && !stopwords[w] && !ignoredLabelWords[w] {
				p.desc = append(p.desc, w)
			}
		}
	}
	return p
}

func appendUniqueInt(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// splitIdentifier turns "feature_request", "featureRequest" and
// "feature-request" into "feature request".
func splitIdentifier(s string) string {
	b := make([]byte, 0, len(s)+4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c == '-' || c == '/' || c == '.':
			b = append(b, ' ')
		case 'A' <= c && c <= 'Z' && i > 0 && 'a' <= s[i-1] && s[i-1] <= 'z':
			b = append(b, ' ', c)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func contains(list []string, w string) bool {
	for _, x := range list {
		if x == w {
			return true
		}
	}
	return false
}

// scoreLabel scores one label against the stemmed text words.
func scoreLabel(p *labelProfile, text []string) int {
	score := 0
	for _, w := range text {
		best := 0
		switch {
		case contains(p.strong, w):
			best = 3
		case contains(p.weak, w), contains(p.desc, w):
			best = 1
		}
		for _, ci := range p.concepts {
			if wt := concepts[ci].words[w]; wt > best {
				best = wt
			}
		}
		score += best
	}
	for _, ci := range p.concepts {
		for _, ph := range concepts[ci].phrases {
			score += ph.weight * countPhrase(text, ph.stems)
		}
	}
	return score
}

func countPhrase(text, ph []string) int {
	n := 0
	for i := 0; i+len(ph) <= len(text); i++ {
		if text[i] != ph[0] {
			continue
		}
		match := true
		for j := 1; j < len(ph); j++ {
			if text[i+j] != ph[j] {
				match = false
				break
			}
		}
		if match {
			n++
		}
	}
	return n
}

// chooseLabel returns the index of the label that best fits the stemmed
// text words (see the package comment above for the rule).
func chooseLabel(items []label, text []string) int {
	best, bestScore, fallback := 0, 0, -1
	for i := range items {
		p := profileOf(items[i])
		if p.fallback && fallback < 0 {
			fallback = i
		}
		if s := scoreLabel(&p, text); s > bestScore {
			best, bestScore = i, s
		}
	}
	if bestScore == 0 && fallback >= 0 {
		return fallback
	}
	return best
}
