package formsubmit

import (
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/svc-gateway/svc/internal/errs"
)

var pageURL = mustURL("http://shop.test/dir/page.html?from=1")

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// requireKind asserts err is an *errs.Error of kind k with code.
func requireKind(t *testing.T, err error, k errs.Kind, code string) *errs.Error {
	t.Helper()
	require.Error(t, err)
	e := errs.As(err)
	require.NotNil(t, e, "not an *errs.Error: %v", err)
	require.Equal(t, k.String(), e.Kind.String(), "%v", err)
	if code != "" {
		require.Equal(t, code, e.Code, "%v", err)
	}
	return e
}

// doc parses src and returns the document.
func doc(t testing.TB, src string) *html.Node {
	t.Helper()
	d, err := html.Parse(strings.NewReader(src))
	require.NoError(t, err)
	return d
}

// find returns the first element matching tag and, when sel is not empty,
// having attribute k=v given as "k=v".
func find(t testing.TB, root *html.Node, tag, sel string) *html.Node {
	t.Helper()
	k, v, _ := strings.Cut(sel, "=")
	var hit *html.Node
	walk(root, func(n *html.Node) {
		if hit == nil && isElement(n, tag) {
			if got, ok := attr(n, k); sel == "" || ok && got == v {
				hit = n
			}
		}
	})
	require.NotNil(t, hit, "no <%s %s>", tag, sel)
	return hit
}

// submit builds the first form of src with the submitter chosen by
// submitterSel ("" for none) and returns the submission.
func submit(t *testing.T, src, submitterSel string, state State) *Submission {
	t.Helper()
	d := doc(t, src)
	var submitter *html.Node
	if submitterSel != "" {
		tag, sel, _ := strings.Cut(submitterSel, " ")
		submitter = find(t, d, tag, sel)
	}
	s, err := Build(find(t, d, "form", ""), submitter, state, pageURL)
	require.NoError(t, err)
	return s
}

// A realistic form, and the request a browser sends for it: the same URL,
// byte for byte.
func TestBrowserSerialization(t *testing.T) {
	t.Parallel()
	const src = `<!doctype html><form action="/search?old=1#results" method=get accept-charset="ISO-8859-1">
	<input type=hidden name=csrf value="a b&c=d">
	<input name=q value="héllo wörld ~*!'()">
	<select name=lang><option value=en>English</option><option selected>  Deutsch  (DE) </option></select>
	<input type=checkbox name=safe checked>
	<input type=checkbox name=nope value=x>
	<input type=radio name=r value=1 checked><input type=radio name=r value=2>
	<textarea name=t>line1
line2</textarea>
	<input type=submit name=other value=Other>
	<button name=go value=1>Go</button>
	</form>`
	s := submit(t, src, "button name=go", State{})
	assert.Equal(t, "GET", s.Method)
	assert.Equal(t, "http://shop.test/search?"+
		"csrf=a+b%26c%3Dd&q=h%C3%A9llo+w%C3%B6rld+%7E*%21%27%28%29&lang=Deutsch+%28DE%29&safe=on&r=1&t=line1%0D%0Aline2&go=1"+
		"#results", s.URL)
	assert.Empty(t, s.Body)
	assert.Empty(t, s.ContentType)
}

func TestEntryListRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src, submitter, want string
	}{
		{"text and hidden", `<form><input name=a value=1><input type=hidden name=h value=2><input value=noname></form>`, "", "a=1&h=2"},
		{"disabled control", `<form><input name=a value=1 disabled><input name=b value=2></form>`, "", "b=2"},
		{"disabled fieldset", `<form><fieldset disabled><input name=a value=1><legend><input name=l value=2></legend></fieldset><input name=b value=3></form>`, "", "l=2&b=3"},
		{"second legend is disabled", `<form><fieldset disabled><legend>x</legend><legend><input name=l value=2></legend></fieldset></form>`, "", ""},
		{"nested disabled fieldset", `<form><fieldset disabled><legend><fieldset><input name=a value=1></fieldset></legend></fieldset></form>`, "", "a=1"},
		{"unchecked checkbox and radio", `<form><input type=checkbox name=c><input type=radio name=r value=1></form>`, "", ""},
		{"checkbox default on", `<form><input type=checkbox name=c checked><input type=checkbox name=d value=yes checked></form>`, "", "c=on&d=yes"},
		{"last checked radio wins", `<form><input type=radio name=r value=1 checked><input type=radio name=r value=2 checked></form>`, "", "r=2"},
		{"buttons other than submitter", `<form><input type=submit name=s value=S><button name=b value=B></button><input type=reset name=x value=R><input type=button name=y value=Y><input name=a value=1></form>`, "", "a=1"},
		{"submitter button", `<form><input type=submit name=s value=S><button name=b value=B></button></form>`, "button name=b", "b=B"},
		{"submitter input without value", `<form><input type=submit name=s></form>`, "input name=s", "s="},
		{"image submitter", `<form><input type=image name=map src=a.png><input name=a value=1></form>`, "input name=map", "map.x=0&map.y=0&a=1"},
		{"image submitter without name", `<form><input type=image src=a.png></form>`, "input type=image", "x=0&y=0"},
		{"image button not submitter", `<form><input type=image name=map><input type=submit name=s value=S></form>`, "input name=s", "s=S"},
		{"file input", `<form><input type=file name=f></form>`, "", "f="},
		{"charset", `<form><input type=hidden name=_CHARSET_ value=x></form>`, "", "_CHARSET_=UTF-8"},
		{"select first option default", `<form><select name=s><option disabled>a</option><option>b</option><option>c</option></select></form>`, "", "s=b"},
		{"select last selected wins", `<form><select name=s><option selected>a</option><option selected>b</option></select></form>`, "", "s=b"},
		{"select multiple", `<form><select name=s multiple><option selected>a</option><option>b</option><option selected value=C>c</option></select></form>`, "", "s=a&s=C"},
		{"select multiple none", `<form><select name=s multiple><option>a</option></select></form>`, "", ""},
		{"select size above one has no default", `<form><select name=s size=3><option>a</option></select></form>`, "", ""},
		{"select optgroup", `<form><select name=s><optgroup label=g disabled><option>a</option></optgroup><optgroup label=h><option>b</option></optgroup></select></form>`, "", "s=b"},
		{"selected disabled option is skipped", `<form><select name=s><option selected disabled>a</option><option>b</option></select></form>`, "", ""},
		{"textarea newlines", "<form><textarea name=t>\na\rb\r\nc\nd</textarea></form>", "", "t=a%0D%0Ab%0D%0Ac%0D%0Ad"},
		{"text value newlines stripped", "<form><input name=a value=\"x\ny\"><input type=email name=e value=\" a@b.test \"></form>", "", "a=xy&e=a%40b.test"},
		{"dirname", `<form><input name=q value=abc dirname=q.dir><textarea name=t dirname=t.dir dir=rtl>x</textarea></form>`, "", "q=abc&q.dir=ltr&t=x&t.dir=rtl"},
		{"dirname auto", `<form dir=rtl><input name=q value="שלום" dir=auto dirname=d><input name=p dirname=e></form>`, "", "q=%D7%A9%D7%9C%D7%95%D7%9D&d=rtl&p=&e=rtl"},
		{"datalist option inputs skipped", `<form><datalist><input name=a value=1></datalist><input name=b value=2></form>`, "", "b=2"},
		{"form attribute", `<form id=f1><input name=a value=1><input name=b value=2 form=f2></form><form id=f2></form><input name=c value=3 form=f1>`, "", "a=1&c=3"},
		{"template content is inert", `<form><template><input name=a value=1></template><input name=b value=2></form>`, "", "b=2"},
		{"unknown type is text", "<form><input type=bogus name=a value=\"x\ny\"></form>", "", "a=xy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := submit(t, c.src, c.submitter, State{})
			assert.Equal(t, "http://shop.test/dir/page.html?"+c.want, s.URL)
		})
	}
}

func TestAgentState(t *testing.T) {
	t.Parallel()
	const src = `<form method=post>
	<input name=q value=old>
	<input type=checkbox name=c value=1>
	<input type=checkbox name=d value=2 checked>
	<input type=radio name=r value=a checked><input type=radio name=r value=b>
	<select name=s><option value=x>X</option><option value=y>Y</option></select>
	<select name=m multiple><option>1</option><option>2</option><option>3</option></select>
	<textarea name=t>default</textarea>
	</form>`
	d := doc(t, src)
	state := State{
		Values: map[*html.Node][]string{
			find(t, d, "input", "name=q"):    {"new\ntext"},
			find(t, d, "select", "name=s"):   {"y"},
			find(t, d, "select", "name=m"):   {"3", "1"},
			find(t, d, "textarea", "name=t"): {"a\nb"},
		},
		Checked: map[*html.Node]bool{
			find(t, d, "input", "name=c"):  true,
			find(t, d, "input", "name=d"):  false,
			find(t, d, "input", "value=b"): true,
		},
	}
	s, err := Build(find(t, d, "form", ""), nil, state, pageURL)
	require.NoError(t, err)
	assert.Equal(t, "POST", s.Method)
	assert.Equal(t, "http://shop.test/dir/page.html?from=1", s.URL, "POST keeps the action's query")
	assert.Equal(t, EncURLEncoded, s.ContentType)
	assert.Equal(t, "q=newtext&c=1&r=b&s=y&m=1&m=3&t=a%0D%0Ab", string(s.Body))
	assert.Equal(t, []Entry{{"q", "newtext", false}, {"c", "1", false}, {"r", "b", false}, {"s", "y", false},
		{"m", "1", false}, {"m", "3", false}, {"t", "a\nb", false}}, s.Entries)
}

func TestStateRefused(t *testing.T) {
	t.Parallel()
	const src = `<form><input name=q><input name=ro readonly><input name=dis disabled><input type=hidden name=h>
	<input type=checkbox name=c><select name=s><option value=x>X</option><option disabled>off</option></select>
	<select name=dsel disabled><option>a</option></select></form><form id=other><input name=o></form>`
	d := doc(t, src)
	form := find(t, d, "form", "")
	cases := []struct {
		name   string
		state  State
		code   string
		public string
	}{
		{"unlisted option", State{Values: map[*html.Node][]string{find(t, d, "select", "name=s"): {"nope"}}},
			"invalid_option", `"nope" is not one of the options of select "s" (options: "x", "off")`},
		{"disabled option", State{Values: map[*html.Node][]string{find(t, d, "select", "name=s"): {"off"}}}, "invalid_option", ""},
		{"two options on a single select", State{Values: map[*html.Node][]string{find(t, d, "select", "name=s"): {"x", "x"}}}, "invalid_form_value", ""},
		{"disabled select", State{Values: map[*html.Node][]string{find(t, d, "select", "name=dsel"): {"a"}}}, "invalid_form_value", ""},
		{"read-only", State{Values: map[*html.Node][]string{find(t, d, "input", "name=ro"): {"x"}}}, "invalid_form_value", `text input "ro" is read-only`},
		{"disabled", State{Values: map[*html.Node][]string{find(t, d, "input", "name=dis"): {"x"}}}, "invalid_form_value", ""},
		{"hidden", State{Values: map[*html.Node][]string{find(t, d, "input", "name=h"): {"x"}}}, "invalid_form_value", `hidden input "h" cannot be typed into`},
		{"checkbox typed", State{Values: map[*html.Node][]string{find(t, d, "input", "name=c"): {"on"}}}, "invalid_form_value", ""},
		{"text checked", State{Checked: map[*html.Node]bool{find(t, d, "input", "name=q"): true}}, "invalid_form_value", ""},
		{"other form's control", State{Values: map[*html.Node][]string{find(t, d, "input", "name=o"): {"x"}}}, "invalid_form_value", "the element is not a control of this form"},
		{"two values", State{Values: map[*html.Node][]string{find(t, d, "input", "name=q"): {"a", "b"}}}, "invalid_form_value", ""},
	}
	for _, c := range cases {
		_, err := Build(form, nil, c.state, pageURL)
		e := requireKind(t, err, errs.Invalid, c.code)
		if c.public != "" {
			assert.Equal(t, c.public, e.Public, c.name)
		}
	}
}

func TestMethodActionEnctype(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src, submitter, method, url, ctype, body string
	}{
		{"empty action is the page", `<form action=""><input name=a value=1></form>`, "", "GET", "http://shop.test/dir/page.html?a=1", "", ""},
		{"no entries still sets the query", `<form action="/x?y=1"></form>`, "", "GET", "http://shop.test/x?", "", ""},
		{"relative action", `<form action="next"><input name=a value=1></form>`, "", "GET", "http://shop.test/dir/next?a=1", "", ""},
		{"base href", `<head><base href="https://other.test/base/"></head><form action="go"><input name=a value=1></form>`, "", "GET", "https://other.test/base/go?a=1", "", ""},
		{"invalid method is get", `<form method=put action=/p><input name=a value=1></form>`, "", "GET", "http://shop.test/p?a=1", "", ""},
		{"POST case-insensitive", `<form method=PoSt action=/p><input name=a value="x y"></form>`, "", "POST", "http://shop.test/p", EncURLEncoded, "a=x+y"},
		{"GET ignores enctype", `<form enctype=multipart/form-data action=/p><input name=a value=1></form>`, "", "GET", "http://shop.test/p?a=1", "", ""},
		{"invalid enctype is urlencoded", `<form method=post enctype=application/json action=/p><input name=a value=1></form>`, "", "POST", "http://shop.test/p", EncURLEncoded, "a=1"},
		{"text/plain", "<form method=post enctype=TEXT/PLAIN action=/p><input name=a value=\"1&2\"><textarea name=b>x\ny</textarea></form>", "", "POST", "http://shop.test/p", EncTextPlain, "a=1&2\r\nb=x\r\ny\r\n"},
		{"formaction, formmethod, formenctype", `<form action=/a method=get><input name=a value=1><button name=b value=2 formaction="/b" formmethod=post formenctype=text/plain></button></form>`,
			"button name=b", "POST", "http://shop.test/b", EncTextPlain, "a=1\r\nb=2\r\n"},
		{"formaction on a non-submitter is ignored", `<form action=/a><button type=submit name=x formaction=/x></button><button name=y></button></form>`,
			"button name=y", "GET", "http://shop.test/a?y=", "", ""},
		{"empty formaction is the page", `<form action=/a><button name=b formaction=""></button></form>`, "button name=b", "GET", "http://shop.test/dir/page.html?b=", "", ""},
		{"formmethod get overrides post", `<form action=/a method=post><input type=submit name=s value=v formmethod=get></form>`, "input name=s", "GET", "http://shop.test/a?s=v", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := submit(t, c.src, c.submitter, State{})
			assert.Equal(t, c.method, s.Method)
			assert.Equal(t, c.url, s.URL)
			assert.Equal(t, c.ctype, s.ContentType)
			assert.Equal(t, c.body, string(s.Body))
		})
	}
}

func TestMultipart(t *testing.T) {
	t.Parallel()
	src := "<form method=post enctype=multipart/form-data action=/up>" +
		"<input name='a\"b' value=1><textarea name=t>x\ny</textarea><input type=file name=f>" +
		"<input type=checkbox name=c checked></form>"
	s := submit(t, src, "", State{})
	mt, params, err := mime.ParseMediaType(s.ContentType)
	require.NoError(t, err)
	assert.Equal(t, EncMultipart, mt)
	r := multipart.NewReader(strings.NewReader(string(s.Body)), params["boundary"])
	type part struct{ disp, ctype, body string }
	var got []part
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, _ := io.ReadAll(p)
		got = append(got, part{p.Header.Get("Content-Disposition"), p.Header.Get("Content-Type"), string(b)})
	}
	assert.Equal(t, []part{
		{`form-data; name="a%22b"`, "", "1"},
		{`form-data; name="t"`, "", "x\r\ny"},
		{`form-data; name="f"; filename=""`, "application/octet-stream", ""},
		{`form-data; name="c"`, "", "on"},
	}, got)
}

func TestSubmitterAndFormRefused(t *testing.T) {
	t.Parallel()
	d := doc(t, `<form id=f action=/a><input name=a><button type=button name=b></button><button name=dis disabled></button></form>
	<form id=g><button name=other></button></form><form method=dialog id=h><button name=d></button></form>
	<form id=j action="javascript:alert(1)"></form><form id=k action="mailto:x@y.test"></form>`)
	form := find(t, d, "form", "id=f")
	for sel, code := range map[string]string{"input name=a": "invalid_submitter", "button name=b": "invalid_submitter",
		"button name=dis": "invalid_submitter", "button name=other": "invalid_submitter"} {
		tag, s, _ := strings.Cut(sel, " ")
		_, err := Build(form, find(t, d, tag, s), State{}, pageURL)
		requireKind(t, err, errs.Invalid, code)
	}
	_, err := Build(find(t, d, "input", "name=a"), nil, State{}, pageURL)
	requireKind(t, err, errs.Invalid, "invalid_form")
	_, err = Build(find(t, d, "form", "id=h"), nil, State{}, pageURL)
	requireKind(t, err, errs.Invalid, "unsupported_form")
	for _, id := range []string{"id=j", "id=k"} {
		_, err = Build(find(t, d, "form", id), nil, State{}, pageURL)
		requireKind(t, err, errs.Forbidden, "scheme_not_allowed")
	}
}

func TestDefaultButton(t *testing.T) {
	t.Parallel()
	d := doc(t, `<form id=f><input type=reset><button type=button>x</button><input type=image name=i><button name=b></button></form><form id=g><input name=a></form>`)
	assert.Equal(t, find(t, d, "input", "name=i"), DefaultButton(find(t, d, "form", "id=f")))
	assert.Nil(t, DefaultButton(find(t, d, "form", "id=g")))
}

func TestPasswordFields(t *testing.T) {
	t.Parallel()
	d := doc(t, `<form id=f><input type=password name=pw><input name=user><input type=PASSWORD name=again><input type=password></form>
	<input type=password name=outside form=f><input type=password name=elsewhere>`)
	assert.Equal(t, map[string]bool{"pw": true, "again": true, "outside": true}, PasswordFields(find(t, d, "form", "id=f")))
}
