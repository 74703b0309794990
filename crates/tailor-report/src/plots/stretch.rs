//! Stretch (latency / processing time) tails per strategy, one figure per swept point.

use super::cdf::distribution_section;
use super::{Ctx, Section};

/// The stretch tail section: for each swept point, 1 − F of read stretch for every strategy.
pub fn section(ctx: &Ctx) -> Section {
    distribution_section(
        ctx,
        "Stretch distribution",
        "Fraction of reads whose stretch (latency divided by its nominal processing time) exceeds x, log axes. \
         Stretch 1 means no waiting; a long tail means small reads waited behind others. Seeds are pooled.",
        "stretch",
        "stretch (latency / processing time)",
        |r| &r.stretch_cdf,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{tests::results, View};
    use crate::plots::test_support::{check_svg, styles};

    #[test]
    fn stretch_figures_render() {
        let r = results("sim");
        let view = View::new(&r);
        let styles = styles(&view);
        let s = section(&Ctx { id: "sim".into(), view: &view, styles: &styles });
        assert_eq!(s.plots.len(), 2);
        assert_eq!(s.plots[1].name, "sim-stretch-interval-ms-500");
        check_svg(&s.plots[0].svg, &["c3", "lor", "stretch (latency / processing time)"]);
    }
}
