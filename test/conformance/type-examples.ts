// Example payloads built from the types a provider's own SDK declares (@slack/types, @line/bot-sdk,
// stripe): every event type in the SDK's union, each with every property the SDK says is always
// there, literal values as declared. Where a provider publishes no corpus of real payloads, these are
// the shapes its maintainers document.
import path from 'node:path';
import ts from 'typescript';

/** Nesting beyond this becomes `{}`: deep enough for every field a receiver reads, small enough to send. */
const MAX_DEPTH = 5;

export class TypeExamples {
  private readonly checker: ts.TypeChecker;
  private readonly exported = new Map<string, ts.Type>();

  /**
   * @param declarations TypeScript source that imports the SDK's types and exports the ones wanted,
   * e.g. `import type Stripe from 'stripe'; export type Event = Stripe.Event;`.
   */
  constructor(declarations: string) {
    // A virtual file beside the tests, so that the SDKs resolve from this project's node_modules.
    const entry = path.join(__dirname, '__sdk_types__.ts');
    const options: ts.CompilerOptions = {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      skipLibCheck: true,
      noEmit: true,
      types: [],
    };
    const host = ts.createCompilerHost(options);
    const getSourceFile = host.getSourceFile.bind(host);
    const fileExists = host.fileExists.bind(host);
    host.getSourceFile = (file, language, ...rest) =>
      file === entry
        ? ts.createSourceFile(file, declarations, language)
        : getSourceFile(file, language, ...rest);
    host.fileExists = (file) => file === entry || fileExists(file);
    const program = ts.createProgram([entry], options, host);
    this.checker = program.getTypeChecker();
    const module = this.checker.getSymbolAtLocation(program.getSourceFile(entry)!);
    if (!module) throw new Error('the SDK types did not resolve: is the package installed?');
    for (const symbol of this.checker.getExportsOfModule(module))
      this.exported.set(symbol.name, this.checker.getDeclaredTypeOfSymbol(symbol));
  }

  /** The members of the union exported as `name` (the type itself when it is no union). */
  variants(name: string): ts.Type[] {
    const type = this.exported.get(name);
    if (!type) throw new Error(`no exported type ${name}`);
    return type.isUnion() ? type.types : [type];
  }

  /** The string literal a property of `type` is declared as (an event's `type`, a message's `subtype`). */
  literal(type: ts.Type, property: string): string | undefined {
    const symbol = this.checker.getPropertyOfType(type, property);
    if (!symbol) return undefined;
    const declared = this.checker.getNonNullableType(this.checker.getTypeOfSymbol(symbol));
    return declared.isStringLiteral() ? declared.value : undefined;
  }

  /** The union members of a property's type (e.g. every kind of LINE message content). */
  propertyVariants(type: ts.Type, property: string): ts.Type[] {
    const symbol = this.checker.getPropertyOfType(type, property);
    if (!symbol) return [];
    const declared = this.checker.getNonNullableType(this.checker.getTypeOfSymbol(symbol));
    return declared.isUnion() ? declared.types : [declared];
  }

  /** An example value of `type`: required properties only; `overrides` replace properties by name at any depth. */
  example(type: ts.Type, overrides: Record<string, (example: unknown) => unknown> = {}): unknown {
    return this.build(type, overrides, 0, 'value');
  }

  private build(
    type: ts.Type,
    overrides: Record<string, (example: unknown) => unknown>,
    depth: number,
    name: string,
  ): unknown {
    const { checker } = this;
    if (type.isStringLiteral() || type.isNumberLiteral()) return type.value;
    const flags = type.getFlags();
    if (flags & ts.TypeFlags.BooleanLiteral)
      return (type as { intrinsicName?: string }).intrinsicName === 'true';
    if (flags & ts.TypeFlags.Null) return null;
    if (
      flags &
      (ts.TypeFlags.String | ts.TypeFlags.Any | ts.TypeFlags.Unknown | ts.TypeFlags.TemplateLiteral)
    )
      return `${name}-1`;
    if (flags & ts.TypeFlags.Number) return 1;
    if (flags & ts.TypeFlags.Boolean) return false;
    if (type.isUnion()) {
      const members = type.types.filter(
        (t) => !(t.getFlags() & (ts.TypeFlags.Undefined | ts.TypeFlags.Null)),
      );
      // A primitive member keeps the example small (Stripe's expandable fields are `string | Object`).
      const primitive = members.find((t) => !(t.getFlags() & ts.TypeFlags.Object));
      const chosen = primitive ?? members[0];
      return chosen ? this.build(chosen, overrides, depth, name) : null;
    }
    if (checker.isArrayType(type) || checker.isTupleType(type)) return [];
    if (depth >= MAX_DEPTH) return {};
    const value: Record<string, unknown> = {};
    for (const symbol of checker.getPropertiesOfType(type)) {
      if (symbol.flags & ts.SymbolFlags.Optional) continue;
      const propertyType = checker.getTypeOfSymbol(symbol);
      // Methods (Stripe's fetchEvent) are the SDK's, not the payload's.
      if (propertyType.getCallSignatures().length > 0) continue;
      const built = this.build(propertyType, overrides, depth + 1, symbol.name);
      const override = overrides[symbol.name];
      value[symbol.name] = override ? override(built) : built;
    }
    return value;
  }
}
