// A Kubernetes label selector as `kubectl get -l` takes it (equality- and set-based), checked before
// the controller starts, so that a typo is one clear sentence at startup and not a watch the API server
// refuses over and over. The API server still parses it; this only says early what it would refuse.

const name = '[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?';
const key = `(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?${name}`;
const value = `(${name})?`;
const requirement = new RegExp(
  `^\\s*(!\\s*${key}|${key}\\s*(==?|!=)\\s*${value}|${key}\\s+(in|notin)\\s*\\(\\s*${value}(\\s*,\\s*${value})*\\s*\\)|${key})\\s*$`,
);

/** Why `selector` is not a label selector, or undefined when it is. */
export function labelSelectorProblem(selector: string): string | undefined {
  const requirements: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const char = selector[i];
    if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === ',' && depth === 0) {
      requirements.push(selector.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) return 'its parentheses do not match';
  }
  if (depth !== 0) return 'its parentheses do not match';
  requirements.push(selector.slice(start));
  const bad = requirements.find((part) => !requirement.test(part));
  return bad === undefined ? undefined : `"${bad.trim()}" is not a requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))`;
}
