import { useEffect, useState } from 'preact/hooks';
import { counted, formatCredits } from './format.ts';

const NARROW = '(max-width: 640px)';

/** Whether the screen is phone-narrow, followed live (rotation, resizing). */
function useNarrow(): boolean {
  const [narrow, setNarrow] = useState(() => matchMedia(NARROW).matches);
  useEffect(() => {
    const media = matchMedia(NARROW);
    const onChange = () => setNarrow(media.matches);
    media.addEventListener('change', onChange);
    return () => media.removeEventListener('change', onChange);
  }, []);
  return narrow;
}

/** Daily spend as an inline SVG bar chart; each bar names its day and amount for screen readers and on hover. */
export function SpendChart(props: { days: Array<{ date: string; cost: number; requests: number }> }) {
  // The SVG scales to its box: on a phone a 720-unit drawing would shrink its 11 px labels to 5 px, so
  // narrow screens get a drawing about as wide as the screen, whose labels stay readable.
  const narrow = useNarrow();
  const width = narrow ? 360 : 720;
  const height = narrow ? 200 : 180;
  const max = Math.max(...props.days.map((d) => d.cost), 0);
  const top = max > 0 ? niceCeiling(max) : 1;
  const ticks = [0, 0.5, 1].map((f) => ({ f, label: formatCredits(top * f) }));
  // The left margin fits the longest tick label (11 px digits are under 7 px wide), so none is cut off;
  // the right one leaves room for half of the last date label, centred on the last bar.
  const pad = { top: 12, right: 16, bottom: 24, left: 12 + 7 * Math.max(...ticks.map((t) => t.label.length)) };
  const slot = (width - pad.left - pad.right) / props.days.length;
  const y = (value: number) => pad.top + (height - pad.top - pad.bottom) * (1 - value / top);
  const total = props.days.reduce((sum, d) => sum + d.cost, 0);
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`Daily spend over the last 30 days: ${formatCredits(total)} credits in all`}
      >
        {ticks.map(({ f, label }) => (
          <g key={f}>
            <line x1={pad.left} x2={width - pad.right} y1={y(top * f)} y2={y(top * f)} class="grid" />
            <text x={pad.left - 6} y={y(top * f) + 4} class="axis" text-anchor="end">
              {label}
            </text>
          </g>
        ))}
        {props.days.map((d, i) => {
          const barHeight = Math.max(d.cost > 0 ? 2 : 0, y(0) - y(d.cost));
          return (
            <rect
              key={d.date}
              x={pad.left + i * slot + slot * 0.18}
              width={slot * 0.64}
              y={y(0) - barHeight}
              height={barHeight}
              rx={2}
              class="bar-rect"
            >
              <title>{`${d.date}: ${formatCredits(d.cost)} credits, ${counted(d.requests, 'request')}`}</title>
            </rect>
          );
        })}
        {props.days.map((d, i) =>
          (props.days.length - 1 - i) % 7 === 0 ? (
            <text
              key={`l${d.date}`}
              x={pad.left + i * slot + slot / 2}
              y={height - 6}
              class="axis"
              text-anchor="middle"
            >
              {d.date.slice(5)}
            </text>
          ) : null,
        )}
      </svg>
    </figure>
  );
}

function niceCeiling(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * magnitude) return step * magnitude;
  return 10 * magnitude;
}
