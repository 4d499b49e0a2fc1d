"""An independent checker for exactspec certificates.

It shares no code with the engine and uses only the standard library (``fractions``, ``json``):
a certificate lists every path with its branch probabilities and its output; the checker
recomputes each path's probability as the product of its branches, checks that the paths sum
to 1 and that the per-token sums equal the target law.  Run it as
``python -m exactspec.checker CERT.json``.
"""

import json
import sys
from fractions import Fraction


def check_certificate(cert):
    """Re-verify a certificate (a dict, or the path of a JSON file).

    Returns a list of problems; an empty list means the certificate checks out.
    """
    if isinstance(cert, str):
        with open(cert) as handle:
            cert = json.load(handle)
    problems = []
    if cert.get("kind") == "exactspec-claim-certificate":
        for number, part in enumerate(cert.get("parts", [])):
            problems += [f"part {number}: {msg}" for msg in check_certificate(part)]
        return problems
    if cert.get("kind") == "exactspec-generic-certificate":
        # proofs for every vocabulary size: sympy re-checks them (exactspec.generic_checker);
        # here, only their witness path certificates
        for case in cert.get("cases", []):
            for point in case.get("witnesses", []):
                problems += [f"generic case {case.get('path')}: {msg}"
                             for msg in check_certificate(point["certificate"])]
        return problems
    if cert.get("kind") == "exactspec-symbolic-certificate":
        for case in cert.get("cases", []):
            for point in case.get("witnesses", []):
                problems += [f"case {case.get('conditions')}: {msg}"
                             for msg in check_certificate(point["certificate"])]
        return problems
    if cert.get("kind") != "exactspec-certificate":
        return [f"unknown certificate kind {cert.get('kind')!r}"]
    target = {lab: Fraction(v) for lab, v in cert["target"].items()}
    law = {lab: Fraction(0) for lab in target}
    total = Fraction(0)
    for number, path in enumerate(cert["paths"]):
        product = Fraction(1)
        for _kind, _what, prob in path["branches"]:
            prob = Fraction(prob)
            if not 0 < prob <= 1:
                problems.append(f"path {number}: branch probability {prob} is not in (0, 1]")
            product *= prob
        recorded = Fraction(path["probability"])
        if product != recorded:
            problems.append(f"path {number}: branches multiply to {product}, "
                            f"recorded {recorded}")
        output = path["output"]
        if output not in law:
            problems.append(f"path {number}: output {output!r} is not a token of the target")
            continue
        law[output] += product
        total += product
    if total != 1:
        problems.append(f"the paths sum to {total}, not 1")
    if cert.get("claim", "lossless") == "lossless":
        for lab in target:
            if law[lab] != target[lab]:
                problems.append(f"token {lab}: paths give {law[lab]}, target {target[lab]}")
    else:
        for lab, value in cert.get("law", {}).items():
            if law.get(lab) != Fraction(value):
                problems.append(f"token {lab}: paths give {law.get(lab)}, certificate says "
                                f"{value}")
    return problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m exactspec.checker CERTIFICATE.json", file=sys.stderr)
        return 2
    try:
        problems = check_certificate(argv[0])
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"error: cannot read certificate {argv[0]}: {err}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    print("CERTIFICATE OK" if not problems else "CERTIFICATE REJECTED")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
