// Server-Sent Events, read as the HTML standard says (§9.2.6): lines end in
// CRLF, LF or CR, a blank line ends an event, a line starting with a colon
// is a comment, and `data` lines join with LF. Bytes arrive in reads that
// may end anywhere, in the middle of a line or of a UTF-8 sequence.

/** One event of a stream. */
export interface SseEvent {
  /** The `event` field, or `message`. */
  event: string;
  /** The `data` lines, joined with LF. */
  data: string;
}

/** SseParser turns the reads of an event stream into its events. */
export class SseParser {
  // Keeps a UTF-8 sequence split across reads, and drops a leading BOM.
  readonly #decoder = new TextDecoder();
  #line = ''; // the start of a line the last read did not end
  #afterCR = false; // the last read ended with CR: an LF opening the next one ends no line
  #data: string[] = [];
  #event = '';

  /** push reads bytes and appends the events they complete to out. */
  push(bytes: Uint8Array, out: SseEvent[]): void {
    this.#lines(this.#decoder.decode(bytes, { stream: true }), out);
  }

  /**
   * end reads what the decoder still holds. An event that no blank line
   * ended is dropped, as the standard says.
   */
  end(out: SseEvent[]): void {
    this.#lines(this.#decoder.decode(), out);
  }

  #lines(text: string, out: SseEvent[]): void {
    let start = 0;
    if (this.#afterCR && text.charCodeAt(0) === 10) start = 1;
    if (text.length > 0) this.#afterCR = false;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.#field(this.#line + text.slice(start, i), out);
      this.#line = '';
      if (c === 13) {
        if (i + 1 === text.length) this.#afterCR = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#line += text.slice(start);
  }

  #field(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0) out.push({ event: this.#event || 'message', data: this.#data.join('\n') });
      this.#data = [];
      this.#event = '';
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' starts a comment, such as a keep-alive
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (name === 'data') this.#data.push(value);
    else if (name === 'event') this.#event = value;
    // id and retry matter to a reconnecting EventSource only; other names are ignored.
  }
}
