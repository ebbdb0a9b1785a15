import type { ComponentChildren } from 'preact';
import type { AppLimit } from '@tollgate/wire';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { formatCredits, percentOf, resetsIn } from './format.ts';
import { fieldErrorOf, type FieldError, type FormFields } from './field-errors.ts';

/**
 * An amount of credits as every form takes it: not below 0, at most 6 decimals (the API's micro-credits), a decimal
 * keypad on a phone. The other attributes (name, placeholder, value, the field's error wiring) are the caller's.
 */
export function CreditsInput(props: {
  name: string;
  placeholder?: string;
  defaultValue?: string;
  value?: string;
  onInput?: (event: Event) => void;
  [wiring: string]: unknown;
}) {
  return <input type="number" min="0" step="0.000001" inputMode="decimal" {...props} />;
}

/** Loads data once (and on `reload`), keeping the last value while a reload runs. */
export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[] = [],
): { data: T | undefined; error: string | null; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: string | null; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: Error) => live && setState((s) => ({ ...s, error: error.message, loading: false })),
    );
    return () => void (live = false);
  }, [...deps, tick]);
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) };
}

// Numbers the actions' field-message ids: a page can hold several forms (Webhooks: the alert's and the endpoint's).
let actions = 0;

/** What {@link useAction} gives a form or a button. */
export interface Action {
  /** True while the action runs: its controls disable themselves on it. */
  busy: boolean;
  /** The message of the last failure, cleared when the action runs again. */
  error: string | null;
  /** Shows a message of the action's own (a refusal that is not an exception). */
  setError: (error: string | null) => void;
  /** The last failure when it was about one of the form's `fields`: shown at that field, not in `error`. */
  fieldError: FieldError | null;
  /** The id of the element showing `fieldError` ({@link FieldMessage}). */
  messageId: string;
  /**
   * What the input named `name` takes so that a refusal of it is told there: aria-invalid, and aria-describedby
   * naming the message (after `describedBy`, the input's own hint). Spread it on each input of a group.
   */
  field: (name: string, describedBy?: string) => Record<string, string | undefined>;
  /**
   * Runs `work` once: busy meanwhile, and its failure shown in `error`, never thrown. While it runs (and after a
   * success that leaves the page) a further call starts nothing, whatever the controls' `disabled` says yet.
   */
  run: (work: () => Promise<unknown>) => Promise<void>;
}

/**
 * The busy and error state of what a form or button does. With `leavesPage` (the action navigates away when
 * it succeeds, as a redirect to Checkout does), `busy` stays true after a success, so that the controls cannot
 * start a second one while the browser leaves.
 *
 * Invariant: one run at a time. `running` is set synchronously, not on the next render as `busy` (and so a
 * control's `disabled`) is, so a double click, a control left enabled or a second control of the same action
 * cannot start the work twice (two Checkout sessions, two saved cards).
 *
 * A button disabled while it has the focus loses it to the page's start: once the work is done, the focus goes
 * back to the control that started it (Load more, Create key) if nothing else took it meanwhile.
 */
export function useAction(options: { leavesPage?: boolean; fields?: FormFields } = {}): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [fieldError, setFieldError] = useState<FieldError | null>(null);
  const running = useRef(false);
  const [messageId] = useState(() => `field-error-${++actions}`);
  const startedFrom = useRef<HTMLElement | null>(null);
  useLayoutEffect(() => {
    const control = startedFrom.current;
    if (busy || !control) return;
    startedFrom.current = null;
    const lost = !document.activeElement || document.activeElement === document.body;
    if (lost && control.isConnected) control.focus();
  }, [busy]);
  // After the effect above: the first (and only) field refused takes the focus from the control pressed.
  useLayoutEffect(() => {
    if (fieldError) document.querySelector<HTMLElement>(`[aria-describedby~="${messageId}"]`)?.focus();
  }, [fieldError]);
  const run = async (work: () => Promise<unknown>) => {
    if (running.current) return;
    running.current = true;
    startedFrom.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    setBusy(true);
    setError(null);
    setFieldError(null);
    try {
      await work();
      if (!options.leavesPage) {
        running.current = false;
        setBusy(false);
      }
    } catch (failure) {
      const atField = options.fields ? fieldErrorOf(failure, options.fields) : null;
      if (atField) setFieldError(atField);
      else setError((failure as Error).message);
      running.current = false;
      setBusy(false);
    }
  };
  const field = (name: string, describedBy?: string) => {
    const refused = fieldError?.field === name;
    const described = [describedBy, refused ? messageId : undefined].filter(Boolean).join(' ');
    return { 'aria-invalid': refused ? 'true' : undefined, 'aria-describedby': described || undefined };
  };
  return { busy, error, setError, fieldError, messageId, field, run };
}

/** The message of a refusal of the field `name` of `action`'s form, placed next to the field (see useAction). */
export function FieldMessage(props: { action: Action; name: string }) {
  const { fieldError, messageId } = props.action;
  if (fieldError?.field !== props.name) return null;
  return (
    <span class="field-error" id={messageId}>
      {fieldError.message}
    </span>
  );
}

export function PageHeader(props: { title: string; lead?: string; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.lead && <p class="lead">{props.lead}</p>}
      </div>
      {props.children && <div class="page-actions">{props.children}</div>}
    </header>
  );
}

/** A titled section. `list` marks it as the home of a list whose rows a ConfirmButton removes (see there). */
export function Card(props: {
  title?: string;
  children: ComponentChildren;
  class?: string;
  label?: string;
  list?: boolean;
}) {
  return (
    <section
      class={`card ${props.class ?? ''}`}
      aria-label={props.label ?? props.title}
      data-row-list={props.list ? '' : undefined}
    >
      {props.title && <h2>{props.title}</h2>}
      {props.children}
    </section>
  );
}

export function Stat(props: { label: string; value: string; hint?: string; testId?: string }) {
  return (
    <div class="stat">
      <div class="stat-label">{props.label}</div>
      <div class="stat-value" data-testid={props.testId}>
        {props.value}
      </div>
      {props.hint && <div class="stat-hint">{props.hint}</div>}
    </div>
  );
}

/** A shell command that wraps only between its words: each word (`grant-credits`, `--amount`, `10`) stays whole. */
export function Command(props: { text: string }) {
  const words = props.text.split(' ');
  return (
    <code class="command">
      {words.flatMap((word, i) => [
        <span class="word" key={i}>
          {word}
        </span>,
        i < words.length - 1 ? ' ' : null,
      ])}
    </code>
  );
}

export function ErrorNote(props: { error: string | null | undefined }) {
  return props.error ? (
    <p class="error-note" role="alert">
      {props.error}
    </p>
  ) : null;
}

export function Empty(props: { children: ComponentChildren }) {
  return <div class="empty">{props.children}</div>;
}

/**
 * A success notice holding a secret shown only once (a new API key, an app's client secret). It takes the focus
 * and scrolls into view when it appears: the form that made it may sit far below it (a phone's long page), and a
 * secret the user never saw is lost for good once they leave. `key` it by the secret so each new one does so.
 */
export function SecretNotice(props: { children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    box.current?.focus({ preventScroll: true });
    box.current?.scrollIntoView({ block: 'start' });
  }, []);
  return (
    <div class="notice success" role="status" tabIndex={-1} ref={box}>
      {props.children}
    </div>
  );
}

/**
 * Copies `value`; says so for two seconds. `subject` (e.g. `key laptop`) completes the name a screen reader gives
 * the button, so that the Copy buttons of a table's rows are told apart; sighted users read the row.
 */
export function CopyButton(props: { value: string; label?: string; subject?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      class="btn small"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(props.value);
        } catch {
          const area = document.createElement('textarea');
          area.value = props.value;
          document.body.append(area);
          area.select();
          document.execCommand('copy');
          area.remove();
        }
        setCopied(true);
        setTimeout(() => setCopied(false), 2000);
      }}
    >
      {copied ? 'Copied' : (props.label ?? 'Copy')}
      {props.subject ? <span class="sr-only"> {props.subject}</span> : null}
    </button>
  );
}

/**
 * Where the focus goes when the row of `wrapper` (a ConfirmButton's) has gone: the next row's action, else the
 * previous row's (among `rows`, the list's actions when the user confirmed), else the list's empty-state text,
 * else its heading. Without this the focus fell to the page's start with the removed button.
 */
function focusAfterRemoval(wrapper: HTMLElement, rows: HTMLElement[], scope: HTMLElement | null) {
  if (document.activeElement && document.activeElement !== document.body) return;
  const at = rows.indexOf(wrapper);
  const live = (row: HTMLElement | undefined) => row?.isConnected && row.querySelector<HTMLElement>('button');
  for (const row of [...rows.slice(at + 1), ...rows.slice(0, Math.max(at, 0)).reverse()]) {
    const button = live(row);
    if (button) return button.focus();
  }
  const place = scope?.isConnected ? scope : document.getElementById('content');
  const target = place?.querySelector<HTMLElement>('.empty') ?? place?.querySelector<HTMLElement>('h1, h2') ?? place;
  if (!target) return;
  if (!target.hasAttribute('tabindex')) target.tabIndex = -1;
  target.focus();
}

/**
 * The page's polite status region (made once, kept in the body so that it is in place before anything is said
 * in it: a region added with its text is not read). Removing a row removes its own notices with it, so what a
 * removal did is said here.
 */
function statusRegion(): HTMLElement {
  let region = document.getElementById('announcements');
  if (!region) {
    region = document.createElement('div');
    region.id = 'announcements';
    region.className = 'sr-only';
    region.setAttribute('role', 'status');
    region.setAttribute('aria-live', 'polite');
    document.body.append(region);
  }
  return region;
}

/** Says `text` to a screen reader, politely ("Key laptop revoked."); the same text twice is said twice. */
export function announce(text: string): void {
  const region = statusRegion();
  region.textContent = '';
  setTimeout(() => (region.textContent = text), 50);
}

/**
 * A destructive action that asks once more inline before it runs. The question takes the focus (the button
 * pressed is gone, and the focus with it), and Cancel or Escape gives it back to the button, so that a
 * keyboard or screen-reader user lands on what they act on rather than on the page's start.
 *
 * `subject` completes the names a screen reader gives both buttons ("Revoke" + "key laptop"), so that the rows'
 * buttons are told apart; `confirmSubject` (default `subject`) does so for the question ("Revoke key" +
 * "laptop"), whose name also starts with a hidden "Confirm", so that "ask" and "do" are told apart. Sighted
 * users read the row. When a confirmed action removes the row (its list, `[data-row-list]`, re-renders without
 * it), the focus moves to a neighbouring row's action rather than to the page's start; the page says what was
 * removed with {@link announce}.
 */
export function ConfirmButton(props: {
  label: string;
  confirm: string;
  subject?: string;
  confirmSubject?: string;
  onConfirm: () => Promise<void> | void;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const wrapper = useRef<HTMLSpanElement>(null);
  const ask = useRef<HTMLButtonElement>(null);
  const confirm = useRef<HTMLButtonElement>(null);
  const answered = useRef(false);
  // The status region exists before a removal speaks in it, or the first announcement would not be read.
  useEffect(() => void statusRegion(), []);
  const confirmed = useRef<{ rows: HTMLElement[]; scope: HTMLElement | null } | null>(null);
  // A layout effect: the focus moves in the same task as the click, before anything else can read it.
  useLayoutEffect(() => {
    if (asking) confirm.current?.focus();
    else if (answered.current) ask.current?.focus();
    answered.current = false;
  }, [asking]);
  useLayoutEffect(() => {
    const own = wrapper.current;
    return () => {
      const removal = confirmed.current;
      // After the unmount: the list's new state (the empty-state text) is in the page by then.
      if (own && removal) setTimeout(() => focusAfterRemoval(own, removal.rows, removal.scope));
    };
  }, []);
  const stopAsking = () => {
    answered.current = true;
    setAsking(false);
  };
  const subject = (text: string | undefined) => (text ? <span class="sr-only"> {text}</span> : null);
  return (
    <span class="confirm-wrap" ref={wrapper} data-row-action="">
      {!asking ? (
        <button type="button" class="btn small danger-ghost" ref={ask} onClick={() => setAsking(true)}>
          {props.label}
          {subject(props.subject)}
        </button>
      ) : (
        <span class="confirm" onKeyDown={(event) => event.key === 'Escape' && !busy && stopAsking()}>
          <button
            type="button"
            class="btn small danger"
            ref={confirm}
            disabled={busy}
            onClick={async () => {
              const own = wrapper.current;
              const scope = own?.closest<HTMLElement>('[data-row-list]') ?? null;
              const rows = Array.from((scope ?? document).querySelectorAll<HTMLElement>('[data-row-action]'));
              setBusy(true);
              try {
                await props.onConfirm();
                confirmed.current = { rows, scope };
              } finally {
                setBusy(false);
                stopAsking();
              }
            }}
          >
            <span class="sr-only">Confirm </span>
            {props.confirm}
            {subject(props.confirmSubject ?? props.subject)}
          </button>
          <button type="button" class="btn small" onClick={stopAsking}>
            Cancel
          </button>
        </span>
      )}
    </span>
  );
}

/** Widths at which every table is stacked, whatever it holds: a phone reads one column of labelled lines best. */
const PHONE = '(max-width: 640px)';

/** Stacks the table in `box` when its columns do not fit the box (or on a phone), else lets it keep its columns. */
function fitTable(box: HTMLElement): void {
  box.classList.remove('stacked');
  // Reading scrollWidth lays the columns out now, in the same task: the reader never sees the table that did not fit.
  const stacked = matchMedia(PHONE).matches || box.scrollWidth > box.clientWidth + 1;
  box.classList.toggle('stacked', stacked);
}

/**
 * The box of a table of class `stack`: the table keeps its columns while they fit the box and is stacked when they
 * do not (`.stacked` in styles.css: one block per row, each cell under its column's name), so that no row's
 * actions end up beyond the box's edge, reachable only by scrolling inside it (an audit found the keys' Revoke
 * there at 1024 px, and clipped at 1280). Measured rather than set at a window width: what fits depends on what
 * the rows hold (a long name, a limit's meter, a redirect URI) and on the box, which the menu narrows.
 */
export function TableBox(props: { children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);
  // After every render of the rows (a key added, a list loaded), before the browser paints them.
  useLayoutEffect(() => fitTable(box.current!));
  useEffect(() => {
    const own = box.current!;
    let frame = 0;
    // The window resized, or a row changed by itself (a confirm's second button): measured again in the next
    // frame, not in the observer's callback, where stacking would resize what it observes (a loop error).
    const observer = new ResizeObserver(() => {
      cancelAnimationFrame(frame);
      frame = requestAnimationFrame(() => fitTable(own));
    });
    observer.observe(own);
    const table = own.querySelector('table');
    if (table) observer.observe(table);
    return () => {
      observer.disconnect();
      cancelAnimationFrame(frame);
    };
  }, []);
  return (
    <div class="table-wrap" ref={box}>
      {props.children}
    </div>
  );
}

/** A limit's bar: spent (solid) and reserved (striped) against the limit, a meter named "<label> spending". */
export function SpendMeter(props: { label: string; limit: AppLimit }) {
  const { limit } = props;
  const spent = percentOf(limit.spent, limit.limit);
  const reserved = Math.min(100 - spent, percentOf(limit.reserved, limit.limit));
  return (
    <div
      class="bar"
      role="meter"
      aria-valuemin={0}
      aria-valuemax={limit.limit}
      aria-valuenow={limit.spent + limit.reserved}
      aria-label={`${props.label} spending`}
    >
      <span class={spent + reserved >= 100 ? 'full' : ''} style={{ width: `${spent}%` }} />
      <span class="reserved" style={{ width: `${reserved}%` }} />
    </div>
  );
}

/** One spending limit: a bar of spent (solid) and reserved (striped) against the limit, and when it resets. */
export function LimitBar(props: { label: string; limit: AppLimit | null }) {
  const { limit } = props;
  if (!limit) {
    return (
      <div class="limit">
        <div class="limit-head">
          <span>{props.label}</span>
          <span class="muted">No limit</span>
        </div>
      </div>
    );
  }
  const reset = resetsIn(limit.resetsAt);
  return (
    <div class="limit" data-testid={`limit-${props.label.toLowerCase()}`}>
      <div class="limit-head">
        <span>{props.label}</span>
        <span>
          <strong>{formatCredits(limit.spent + limit.reserved)}</strong>{' '}
          <span class="muted">of {formatCredits(limit.limit)} credits</span>
        </span>
      </div>
      <SpendMeter label={props.label} limit={limit} />
      <div class="limit-foot muted">
        {reset ? reset[0].toUpperCase() + reset.slice(1) : 'Never resets'}
        {limit.reserved > 0 ? ` · ${formatCredits(limit.reserved)} held for calls in flight` : ''}
      </div>
    </div>
  );
}

export function Chips(props: { items: string[] }) {
  return (
    <span class="chips">
      {props.items.map((item) => (
        <span class="chip" key={item}>
          {item}
        </span>
      ))}
    </span>
  );
}
