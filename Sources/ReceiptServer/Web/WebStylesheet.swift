/// The web view's one stylesheet, written by hand (no framework, nothing fetched from elsewhere).
/// Phone first: below 40rem the receipt list is a column of cards (thumbnail, merchant, date,
/// total, claim) and nothing is wider than the screen; wider screens get the table, and the receipt
/// page its preview beside the details. Colours keep a contrast of at least 4.5:1 on their
/// background in light and dark mode; the focus is always visible.
extension WebTemplates {
    static let stylesheet = """
    :root { color-scheme: light dark; --accent: #1a5fb4; --button: #1a5fb4; --error: #a51d2d; --notice: #1c6b45;
            --line: #8886; font-family: system-ui, sans-serif; line-height: 1.4; }
    @media (prefers-color-scheme: dark) {
      :root { --accent: #99c1f1; --error: #ff8a8a; --notice: #8ff0a4; }
    }
    * { box-sizing: border-box; }
    body { margin: 0 auto; max-width: 64rem; padding: 0 1rem 2rem; overflow-wrap: break-word; }
    header { display: flex; justify-content: space-between; align-items: center; gap: 1rem; flex-wrap: wrap;
             border-bottom: 1px solid var(--line); padding: .5rem 0; }
    header form { margin: 0; }
    a { color: var(--accent); }
    a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible,
    summary:focus-visible { outline: 3px solid #e5a50a; outline-offset: 2px; }
    .skip { position: absolute; left: -999px; }
    .skip:focus { left: 1rem; top: 1rem; background: Canvas; padding: .5rem; }
    table { border-collapse: collapse; width: 100%; margin: 1rem 0; }
    caption { text-align: left; font-weight: bold; padding: .25rem 0; }
    th, td { text-align: left; padding: .4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
    .num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
    .stack { display: grid; grid-template-columns: minmax(0, 1fr); gap: .4rem; max-width: 28rem; }
    .filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
    .filters label, .bulk-fields label { display: grid; }
    input, select, button, textarea { font: inherit; padding: .4rem; max-width: 100%; min-width: 0; }
    button { background: var(--button); color: #fff; border: 0; border-radius: 4px; padding: .5rem 1rem; cursor: pointer; }
    details { margin: .75rem 0; }
    summary { cursor: pointer; color: var(--accent); padding: .25rem 0; }
    .add { display: grid; grid-template-columns: minmax(0, 1fr); gap: .5rem; max-width: 28rem; padding: .75rem; border: 1px solid var(--line); border-radius: 6px; }
    .add h2 { margin: 0; font-size: 1.15rem; }
    .bulk-fields { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; border: 1px solid var(--line); }
    .error { color: var(--error); font-weight: bold; }
    .notice { color: var(--notice); font-weight: bold; }
    .attachments { list-style: none; padding: 0; }
    .attachments li { margin: 0 0 1rem; }
    figure { margin: 0; }
    img { max-width: 100%; height: auto; border: 1px solid var(--line); }
    dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
    dd { margin: 0; }
    .note { white-space: pre-line; }
    pre.text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem; overflow-y: auto; font-size: .85rem; }
    .pages { display: flex; gap: 1rem; }
    .thumb { width: 4.5rem; }
    .thumb img { width: 4rem; max-width: none; height: 4rem; object-fit: contain; border: 0; }
    .review-field { border-top: 1px solid var(--line); padding: .5rem 0; }
    .review-field p { margin: .25rem 0; }
    .review-actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .5rem 0; }
    .review-actions input { flex: 1 1 8rem; }
    .review-actions form { margin: 0; }
    .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
    @media (min-width: 48rem) {
      .receipt { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1.5rem; align-items: start; }
    }
    @media (max-width: 40rem) {
      .receipts thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
      .receipts, .receipts tbody, .receipts caption { display: block; }
      .receipts tr { display: grid; grid-template-columns: auto 4.5rem minmax(0, 1fr) auto;
                     grid-template-areas: "pick thumb merchant merchant" "pick thumb date total" "pick thumb status status";
                     gap: .1rem .5rem; padding: .5rem 0; border-bottom: 1px solid var(--line); }
      .receipts td { border: 0; padding: 0; }
      .receipts .pick { grid-area: pick; align-self: center; }
      .receipts .thumb { grid-area: thumb; }
      .receipts .merchant { grid-area: merchant; font-weight: bold; }
      .receipts .total { grid-area: total; }
      .receipts .date { grid-area: date; }
      .receipts .status { grid-area: status; }
      .receipts .category, .receipts .files { display: none; }
      .pick input { width: 1.5rem; height: 1.5rem; }
    }
    """
}
