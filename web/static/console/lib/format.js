// Numbers, money, durations and times written for people.

const plain = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

// num writes a count or measure with at most two decimals: 1,234.5.
export function num(n) {
  if (n === null || n === undefined || Number.isNaN(Number(n))) return '–';
  return plain.format(Number(n));
}

// money writes US dollars: to the cent from a cent up ($1,234.57), else to
// four significant digits ($0.0002352), and $0 for zero.
export function money(usd) {
  if (usd === null || usd === undefined || Number.isNaN(Number(usd))) return '–';
  const v = Number(usd);
  if (v === 0) return '$0';
  const sign = v < 0 ? '−' : '';
  const a = Math.abs(v);
  if (a >= 0.01) {
    return sign + '$' + a.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  return sign + '$' + Number(a.toPrecision(4)).toLocaleString(undefined, { maximumSignificantDigits: 4 });
}

// pct writes a ratio (0..1) as a percentage with at most one decimal.
export function pct(ratio) {
  if (ratio === null || ratio === undefined || Number.isNaN(Number(ratio))) return '–';
  return (Number(ratio) * 100).toLocaleString(undefined, { maximumFractionDigits: 1 }) + '%';
}

// ms writes a duration given in milliseconds: 0.42 ms, 12 ms, 1.4 s, 2 min 5 s.
export function ms(v) {
  if (v === null || v === undefined || Number.isNaN(Number(v))) return '–';
  const n = Number(v);
  if (n < 1) return n.toLocaleString(undefined, { maximumFractionDigits: 2 }) + ' ms';
  if (n < 1000) return Math.round(n).toLocaleString() + ' ms';
  if (n < 60000) return (n / 1000).toLocaleString(undefined, { maximumFractionDigits: 1 }) + ' s';
  const min = Math.floor(n / 60000);
  return `${min} min ${Math.round((n % 60000) / 1000)} s`;
}

// bytes writes a size: 812 B, 4.2 KB, 1.3 MB.
export function bytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KB', 'MB', 'GB'];
  let v = Number(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return v.toLocaleString(undefined, { maximumFractionDigits: i === 0 ? 0 : 1 }) + ' ' + units[i];
}

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

// ago writes how long ago (or from now) an RFC 3339 time is: "3 minutes ago".
export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '–';
  const s = Math.round((t - now) / 1000);
  const a = Math.abs(s);
  if (a < 45) return rtf.format(s, 'second');
  if (a < 2700) return rtf.format(Math.round(s / 60), 'minute');
  if (a < 64800) return rtf.format(Math.round(s / 3600), 'hour');
  if (a < 2592000) return rtf.format(Math.round(s / 86400), 'day');
  return new Date(t).toLocaleDateString();
}

// when writes an RFC 3339 time in the person's own zone: 25 Nov 2026, 14:03:07.
export function when(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '–';
  return new Date(t).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

// time is a <time> element that shows the relative time and, on hover, the
// full local time.
export function time(iso) {
  const el = document.createElement('time');
  if (!iso) {
    el.textContent = '–';
    return el;
  }
  el.dateTime = iso;
  el.dataset.ago = '';
  el.title = when(iso);
  el.textContent = ago(iso);
  return el;
}

// refreshTimes writes again every relative time under root (those time()
// made), so "just now" becomes "2 minutes ago" on a page left open.
export function refreshTimes(root, now = Date.now()) {
  for (const el of root.querySelectorAll('time[data-ago][datetime]')) {
    const text = ago(el.dateTime, now);
    if (el.textContent !== text) el.textContent = text;
  }
}

// plural writes "1 run", "2 runs".
export function plural(n, word, many = word + 's') {
  return `${num(n)} ${n === 1 ? word : many}`;
}
