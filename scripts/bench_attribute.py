"""Does ranking the attribute a question asks about help? The retrieval benchmark's near-twin corpus
(`fabric bench retrieval`: 80 people with shared first names and surnames one letter apart, 6 of 10
relations each, 4 phrasings of each fact and 3 of each question, 20% of questions in lower case),
loaded WITH its keys -- the caller's relation names (city, employer, pet, birth_month, ...), which are
not the names of placement's lexicon -- and asked in hybrid mode three ways, same data, same run:
the attribute rank off (weight 0: the ranking before it), as a bounded bonus (1/61: one first place
in one leg) and as a tier (0.5, the default: after the named terms, before the fused score).

    python scripts/bench_attribute.py [--seed 7]

Runs in a scratch database on the embedded server (FABRIC_DATA_DIR), dropped afterwards."""

from __future__ import annotations

import argparse

from fabric import Fabric, servers
from fabric.bench import retrieval
from fabric.config import Settings
from fabric.read import search

WEIGHTS = (("attribute off (0)", 0.0), ("bonus (1/61)", 1 / 61), ("tier (0.5, default)", search.ATTRIBUTE_WEIGHT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    settings = Settings.from_env()
    with retrieval.scratch_database(settings.database_url or servers.postgres_url(settings.data_dir)) as url:
        fab = Fabric.connect(url, settings.redis_url, run_worker=False)
        try:
            corpus = retrieval.generate(entities=80, relations_per_entity=6, questions=240, seed=args.seed)
            retrieval.run_quality(fab, corpus, org="keyed", keyed=True)   # loads the corpus with its keys
            subjects = {f.id: f.subject for f in corpus.facts}
            for label, weight in WEIGHTS:
                # The weight every search binds (search_params' default), for this run only.
                search.search_params.__kwdefaults__["attribute_weight"] = weight
                results = [[m.id for m in fab.search(q.text, org="keyed", k=5)] for q in corpus.questions]
                row = retrieval._score(results, corpus, subjects, label)
                print(f"seed {args.seed}  {label:20s} top-1 {row.top1:.3f}  recall@5 {row.recall5:.3f}  "
                      f"twin ahead {row.twin_ahead:.3f}  "
                      + "  ".join(f"{style} top-1 {v['top1']:.3f}" for style, v in row.by_style.items()), flush=True)
        finally:
            fab.close()


if __name__ == "__main__":
    main()
