/** A small well-formedness check for the SVG strings the dashboard renders (no DOMParser under Node). */

export interface XmlElement {
  readonly name: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly children: XmlElement[];
  text: string;
}

const TAG = /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[A-Za-z_:][\w:.-]*="[^"<]*")*)\s*(\/?)>/y;
const ATTR = /([A-Za-z_:][\w:.-]*)="([^"<]*)"/g;
const TEXT = /[^<]*/y;
const ENTITY = /&(?:#\d+|#x[0-9a-fA-F]+|amp|lt|gt|quot|apos);/g;

function checkEntities(s: string, where: string): void {
  if (s.replace(ENTITY, "").includes("&")) throw new Error(`bare & in ${where}: ${s}`);
}

/** Parses a single-rooted XML fragment (elements, attributes, text; no comments, CDATA or prolog). Throws when malformed. */
export function parseXml(source: string): XmlElement {
  const stack: XmlElement[] = [];
  let root: XmlElement | null = null;
  let at = 0;
  while (at < source.length) {
    TEXT.lastIndex = at;
    const text = TEXT.exec(source)![0];
    if (text.length > 0) {
      if (stack.length === 0) {
        if (text.trim() !== "") throw new Error(`text outside the root at ${at}`);
      } else {
        if (text.includes(">")) throw new Error(`bare > in text at ${at}`);
        checkEntities(text, "text");
        stack[stack.length - 1]!.text += text;
      }
      at += text.length;
      continue;
    }
    TAG.lastIndex = at;
    const m = TAG.exec(source);
    if (m === null) throw new Error(`malformed tag at ${at}: ${source.slice(at, at + 40)}`);
    const [whole, close, name, attrText, selfClose] = m;
    at += whole.length;
    if (close === "/") {
      if (attrText !== "" || selfClose === "/") throw new Error(`malformed end tag </${name}>`);
      const open = stack.pop();
      if (open === undefined || open.name !== name) throw new Error(`</${name}> closes <${open?.name ?? "nothing"}>`);
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of attrText!.matchAll(ATTR)) {
      if (a[1]! in attrs) throw new Error(`duplicate attribute ${a[1]} on <${name}>`);
      checkEntities(a[2]!, `attribute ${a[1]}`);
      attrs[a[1]!] = a[2]!;
    }
    const el: XmlElement = { name: name!, attrs, children: [], text: "" };
    if (stack.length === 0) {
      if (root !== null) throw new Error("more than one root element");
      root = el;
    } else {
      stack[stack.length - 1]!.children.push(el);
    }
    if (selfClose !== "/") stack.push(el);
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack[stack.length - 1]!.name}>`);
  if (root === null) throw new Error("no root element");
  return root;
}

/** Every element of the tree, depth first. */
export function walk(el: XmlElement): XmlElement[] {
  return [el, ...el.children.flatMap(walk)];
}

export const classes = (el: XmlElement): string[] => (el.attrs["class"] ?? "").split(/\s+/).filter((c) => c !== "");
