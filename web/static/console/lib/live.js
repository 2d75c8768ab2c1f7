// Live updates from a server-sent events endpoint under /api/v1/.

// listen opens an EventSource on path and calls onEvent(data) with the
// parsed JSON of every event named name. onState(state) hears 'live',
// 'reconnecting' and 'closed'. It returns a function that closes the
// stream; a view calls it from ctx.onLeave. The browser reconnects by
// itself; a view that must not miss an event reloads its list when the
// state turns 'live' again.
export function listen(path, name, onEvent, onState = () => {}) {
  const es = new EventSource(path, { withCredentials: true });
  es.addEventListener('open', () => onState('live'));
  es.addEventListener('error', () => onState(es.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting'));
  es.addEventListener(name, (ev) => {
    let data = null;
    try {
      data = JSON.parse(ev.data);
    } catch {
      return;
    }
    onEvent(data, ev.lastEventId);
  });
  return () => es.close();
}
