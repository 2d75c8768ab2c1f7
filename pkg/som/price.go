package som

import (
	"regexp"
	"strconv"
	"strings"
)

// symbols maps currency signs and codes to ISO 4217. "$" alone is USD by
// convention; pages that mean another dollar say so in structured data.
var symbols = map[string]string{
	"$": "USD", "us$": "USD", "usd": "USD", "£": "GBP", "gbp": "GBP", "€": "EUR", "eur": "EUR",
	"¥": "JPY", "jpy": "JPY", "₹": "INR", "inr": "INR", "c$": "CAD", "ca$": "CAD", "cad": "CAD",
	"a$": "AUD", "au$": "AUD", "aud": "AUD", "chf": "CHF", "kr": "SEK", "sek": "SEK", "zł": "PLN",
	"pln": "PLN", "r$": "BRL", "brl": "BRL", "₩": "KRW", "krw": "KRW", "₽": "RUB", "rub": "RUB",
	"nzd": "NZD", "nz$": "NZD", "hk$": "HKD", "hkd": "HKD", "cny": "CNY", "rmb": "CNY", "mxn": "MXN",
}

const (
	curRe = `(?i:us\$|c\$|ca\$|a\$|au\$|nz\$|hk\$|r\$|[$£€¥₹₩₽]|usd|gbp|eur|jpy|inr|cad|aud|chf|sek|pln|zł|brl|krw|rub|nzd|hkd|cny|rmb|mxn|kr)`
	numRe = `(\d{1,3}(?:[,.\x{a0} ]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)`
)

var (
	plainDecimal = regexp.MustCompile(`^\d{1,15}(\.\d{1,6})?$`)
	priceBefore  = regexp.MustCompile(`(` + curRe + `)\s?` + numRe)
	priceAfter   = regexp.MustCompile(numRe + `\s?(` + curRe + `)(?:$|[^\p{L}])`)
)

// parsePrice finds the first currency amount in s: "$1,299.00", "129,00 €",
// "GBP 48.99". It returns nil when s holds none.
func parsePrice(s string) *Price {
	if len(s) > 200 {
		s = s[:200]
	}
	var cur, num string
	if m := priceBefore.FindStringSubmatchIndex(s); m != nil {
		cur, num = s[m[2]:m[3]], s[m[4]:m[5]]
	} else if m := priceAfter.FindStringSubmatchIndex(s); m != nil {
		num, cur = s[m[2]:m[3]], s[m[4]:m[5]]
	} else {
		return nil
	}
	amount, ok := normAmount(num)
	if !ok {
		return nil
	}
	return &Price{Amount: amount, Currency: symbols[strings.ToLower(cur)], Raw: clean(s)}
}

// normAmount turns a written amount into a plain decimal: the last '.' or
// ',' followed by one or two digits is the decimal point, any other
// separator groups thousands.
func normAmount(num string) (string, bool) {
	num = strings.TrimSpace(num)
	if num == "" {
		return "", false
	}
	dec := -1
	for i := len(num) - 1; i >= 0; i-- {
		if num[i] == '.' || num[i] == ',' {
			if d := len(num) - i - 1; d == 1 || d == 2 {
				dec = i
			}
			break
		}
	}
	var b strings.Builder
	for i := 0; i < len(num); i++ {
		c := num[i]
		switch {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case i == dec:
			b.WriteByte('.')
		}
	}
	out := strings.TrimLeft(b.String(), "0")
	if out == "" || out[0] == '.' {
		out = "0" + out
	}
	if _, err := strconv.ParseFloat(out, 64); err != nil {
		return "", false
	}
	return out, true
}

// structuredAmount normalises an amount from structured data, which is a
// JSON number or a machine-readable string ("48.99", "1299").
func structuredAmount(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", false
	}
	if plainDecimal.MatchString(v) {
		return v, true
	}
	if p := parsePrice("$" + v); p != nil {
		return p.Amount, true
	}
	return normAmount(v)
}

// amountOf returns p's amount as a number.
func amountOf(p *Price) (float64, bool) {
	if p == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(p.Amount, 64)
	return f, err == nil
}

// currencyCode maps a structured priceCurrency ("USD", "£") to ISO 4217.
func currencyCode(s string) string {
	s = strings.TrimSpace(s)
	if c, ok := symbols[strings.ToLower(s)]; ok {
		return c
	}
	if len(s) == 3 {
		return strings.ToUpper(s)
	}
	return ""
}
