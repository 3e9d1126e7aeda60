"""`kbench catalogs --coverage REALIZATION`: which tail classes the chosen
catalogs hit for one realization on one target (kbench.problems.tails):
residues of N mod n_step and M mod m_step, K classes, boundary classes,
and which they miss."""

from __future__ import annotations

from collections.abc import Sequence

import click

from kbench.errors import KbenchError


def _ints(values: Sequence[int]) -> str:
    return " ".join(map(str, values)) if values else "-"


def print_coverage(realization: str, target_spec: str, shapes: Sequence[str],
                   plugins: Sequence[str]) -> None:
    from kbench.harness.runner import adapted, why_not
    from kbench.harness.selection import derived_tails, realization_steps
    from kbench.problems import catalog as catalogs
    from kbench.problems import tails
    from kbench.problems.cases import Case, ConvCase, GemmCase
    from kbench.targets.spec import parse_target

    try:
        target = parse_target(target_spec, list(plugins))
        info = target.info()
    except KbenchError as exc:
        raise click.ClickException(f"target {target_spec}: {exc}") from None
    try:
        reals = {r.name: r for r in info.realizations}
        r = reals.get(realization)
        if r is None:
            raise click.BadParameter(
                f"{realization!r} is not a realization of {target_spec} (offered: "
                f"{', '.join(reals)})", param_hint="--coverage")
        steps = realization_steps(info, r)
        names = list(shapes) or [str(p) for p in catalogs.default_catalog_paths().values()]
        taken: list[tuple[str, Case]] = []
        lost: list[tuple[str, str, str]] = []
        for name in names:
            if name == tails.CATALOG:
                taken += [(tails.CATALOG, c) for c in derived_tails(steps, r)]
                continue
            try:
                cat = catalogs.load_catalog(catalogs.resolve_catalog(name))
            except catalogs.CatalogError as exc:
                raise click.BadParameter(str(exc), param_hint="--shapes") from None
            for c in cat.cases:
                if c.op != r.op:
                    continue
                run = adapted(c, r)
                why = why_not(run, r)
                if why:
                    lost.append((cat.name, c.name, why))
                else:
                    taken.append((cat.name, run))
        shape_list = []
        for _, c in taken:
            if isinstance(c, GemmCase):
                shape_list.append((c.m, c.n, c.k))
            else:
                assert isinstance(c, ConvCase)
                shape_list.append((c.n * c.out_h * c.out_w, c.c_out, c.reduction))
        cov = tails.coverage(steps, shape_list)
        shown = ", ".join(dict.fromkeys(_stem(n) for n in names))
        click.echo(f"realization:  {r.name} ({r.op}) on {target_spec}")
        click.echo(f"blocking:     {steps.describe()}")
        click.echo(f"catalogs:     {shown}: {len(taken)} case(s) it takes, "
                   f"{len(lost)} it does not")
        ns, ms = steps.n_step, steps.m_step
        rows = [
            (f"N mod {ns}", sorted(cov.n_residues), cov.missing_n()),
            (f"M mod {ms}", sorted(cov.m_residues), cov.missing_m()),
            ("K classes", sorted(cov.k_classes), cov.missing_k()),
        ]
        for label, hit, missing in rows:
            click.echo(f"{label + ':':13s} hit {_ints(hit)}; missing {_ints(missing)}")
        hit_b = [b for b in tails.boundary_names(steps) if b in cov.boundaries]
        click.echo(f"{'boundaries:':13s} hit {', '.join(hit_b) or '-'}; missing "
                   f"{', '.join(cov.missing_boundaries()) or '-'}")
        for cat, case, why in lost:
            click.echo(f"not taken:    {cat}/{case}: {why}")
    finally:
        target.close()


def _stem(name: str) -> str:
    """A catalog's bare name, as given or by its file."""
    from pathlib import Path
    return Path(name).name.removesuffix(".toml")
